import { describe, expect, it } from "vitest";
import { isTransientRedisError } from "./redis-errors.js";

const replyError = (message: string) => Object.assign(new Error(message), { name: "ReplyError" });

describe("which Redis failures are an outage", () => {
  it.each([
    ["out of memory under noeviction", replyError("OOM command not allowed when used memory > 'maxmemory'.")],
    [
      "a script refused for memory",
      replyError("ERR Error running script: @user_script:3: -OOM command not allowed"),
    ],
    ["a replica after failover", replyError("READONLY You can't write against a read only replica.")],
    ["a dataset still loading", replyError("LOADING Redis is loading the dataset in memory")],
    ["a cluster without a quorum", replyError("CLUSTERDOWN The cluster is down")],
    ["a slot mid-migration", replyError("TRYAGAIN Multiple keys request during rehashing of slot")],
    ["a redirect without a target", replyError("MOVED 3999 :0")],
    ["a command timeout", new Error("Command timed out")],
    ["a lost connection", Object.assign(new Error("read ECONNRESET"), { code: "ECONNRESET" })],
    [
      "a transaction aborted by a refusal",
      Object.assign(replyError("EXECABORT Transaction discarded because of previous errors."), {
        previousErrors: [replyError("OOM command not allowed when used memory > 'maxmemory'.")],
      }),
    ],
  ])("counts %s as transient", (_, error) => {
    expect(isTransientRedisError(error)).toBe(true);
  });

  it.each([
    ["a wrong type", replyError("WRONGTYPE Operation against a key holding the wrong kind of value")],
    ["a script error", replyError("ERR Error running script: @user_script:1: attempt to index nil")],
    ["an existing group", replyError("BUSYGROUP Consumer Group name already exists")],
    [
      "a handler's own error",
      Object.assign(new Error("seq 5 arrived before seq 4"), { code: "RECORD_OUT_OF_ORDER" }),
    ],
    ["a non-error", "OOM "],
  ])("counts %s as the entry's own failure", (_, error) => {
    expect(isTransientRedisError(error)).toBe(false);
  });
});
