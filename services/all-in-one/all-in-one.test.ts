import { mkdtempSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterEach, describe, expect, it } from "vitest";
import { freePort } from "../../libs/redis/redis-server-process.js";
import { TsProcess } from "../../test/helpers/child-process.js";

let child: TsProcess | undefined;
afterEach(async () => {
  await child?.kill("SIGTERM");
});

describe("npm start (all-in-one)", () => {
  it("starts its own Redis when REDIS_URL is unset and answers /healthz, /readyz and /metrics", async () => {
    const port = await freePort();
    const dataDir = mkdtempSync(join(tmpdir(), "aio-"));
    child = new TsProcess("services/all-in-one/main.ts", {
      PORT: String(port),
      REDIS_DATA_DIR: dataDir,
      REDIS_URL: undefined,
    });
    await child.waitForOutput("listening on");
    expect(child.log).toContain("started redis-server");
    const base = `http://127.0.0.1:${port}`;
    expect((await fetch(`${base}/healthz`)).status).toBe(200);
    const ready = await fetch(`${base}/readyz`);
    expect(ready.status).toBe(200);
    expect(await ready.json()).toMatchObject({ ok: true, checks: { redis: true } });
    const metrics = await (await fetch(`${base}/metrics`)).text();
    expect(metrics).toContain("process_cpu_seconds_total");
  });
});
