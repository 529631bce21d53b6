import { spawnSync } from "node:child_process";
import { describe, expect, it } from "vitest";

/**
 * Issue 17 item 3: the real CLIs run inside `unshare --net` with only loopback up, so nothing they try can leave the
 * box. Shown with the same wrapping the sandbox uses: an attempt to reach an outside address, a name lookup, and the
 * host's own Redis on 127.0.0.1 (a different loopback) all fail.
 */
function insideNamespace(script: string): { status: number | null; stdout: string } {
  const run = spawnSync(
    "unshare",
    ["--net", "--", "sh", "-c", `ip link set lo up && exec "${process.execPath}" -e '${script}'`],
    { encoding: "utf8", timeout: 30_000 },
  );
  return { status: run.status, stdout: run.stdout.trim() };
}
const connectScript = (host: string, port: number) =>
  `const s=require("node:net").connect(${port},"${host}");s.setTimeout(5000);` +
  `s.on("connect",()=>{console.log("connected");process.exit(0)});` +
  `s.on("timeout",()=>{console.log("timeout");process.exit(2)});` +
  `s.on("error",e=>{console.log(e.code);process.exit(1)})`;

describe("the sandbox's network namespace", () => {
  it("cannot reach an outside address", () => {
    expect(insideNamespace(connectScript("1.1.1.1", 443))).toEqual({ status: 1, stdout: "ENETUNREACH" });
  });

  it("cannot resolve a public name", () => {
    const lookup = insideNamespace(
      `require("node:dns").lookup("registry.npmjs.org",e=>{console.log(e?e.code:"resolved");process.exit(e?1:0)})`,
    );
    expect(lookup.status).toBe(1);
    expect(["EAI_AGAIN", "ENOTFOUND"]).toContain(lookup.stdout);
  });

  it("does not see the host's loopback services (Redis on 127.0.0.1:6379)", () => {
    expect(insideNamespace(connectScript("127.0.0.1", 6379))).toEqual({ status: 1, stdout: "ECONNREFUSED" });
  });
});
