import { afterEach, beforeEach, describe, expect, it } from "vitest";
import { OsDeviceKeys } from "../../libs/os-store/os-keys.js";
import { createTestRedis, type TestRedis } from "../../test/helpers/test-redis.js";
import { registerVoiceRun } from "../../test/os/os-fixture.js";
import { RouterStore } from "./router-store.js";

const DEVICE = "lamp-claims";
const LEASE_OWNER = "router-under-test";

let t: TestRedis;
let device: OsDeviceKeys;
let store: RouterStore;
let runA: string;
let runB: string;

beforeEach(async () => {
  t = createTestRedis("result-claim");
  device = new OsDeviceKeys(t.keys, DEVICE);
  store = new RouterStore(t.redis, device, LEASE_OWNER);
  await t.redis.set(device.lease, LEASE_OWNER);
  ({ runId: runA } = await registerVoiceRun(t, DEVICE));
  ({ runId: runB } = await registerVoiceRun(t, DEVICE));
});
afterEach(() => t.cleanup());

const routedAs = async (runId: string) => t.redis.hget(device.run(runId), "routedAs");

describe("claiming a validated result's runs before it is routed", () => {
  it("claims every member run for the result, and a replay of the same content claims nothing new", async () => {
    expect(await store.claimResult("origin|r-1", "hash-1", [runA, runB])).toEqual({ outcome: "claimed" });
    expect([await routedAs(runA), await routedAs(runB)]).toEqual(["origin|r-1", "origin|r-1"]);
    expect(await t.redis.get(device.resultClaim("origin|r-1"))).toBe("hash-1");
    expect(await store.claimResult("origin|r-1", "hash-1", [runA, runB])).toEqual({ outcome: "replayed" });
  });

  it("refuses a second result listing a run another result claimed, and claims none of its runs", async () => {
    await store.claimResult("origin|r-1", "hash-1", [runA]);
    expect(await store.claimResult("origin|r-2", "hash-2", [runB, runA])).toEqual({
      outcome: "member_taken",
      runId: runA,
      state: "pending",
      routedAs: "origin|r-1",
    });
    expect(await routedAs(runB)).toBeNull();
  });

  it("answers other content under a claimed identity with the claimed hash, claiming nothing", async () => {
    await store.claimResult("origin|r-1", "hash-1", [runA]);
    expect(await store.claimResult("origin|r-1", "hash-changed", [runA, runB])).toEqual({
      outcome: "content_changed",
      claimedHash: "hash-1",
    });
    expect(await routedAs(runB)).toBeNull();
  });

  it("refuses a run that ended before the claim", async () => {
    await store.endRun(runA, "RESULT_NOT_RECEIVED", Date.now());
    expect(await store.claimResult("origin|r-1", "hash-1", [runA])).toEqual({
      outcome: "member_taken",
      runId: runA,
      state: "unknown",
    });
  });

  it("is refused to a router that lost the device lease", async () => {
    await t.redis.set(device.lease, "another-router");
    await expect(store.claimResult("origin|r-1", "hash-1", [runA])).rejects.toThrow(/LEASE_LOST/);
  });
});
