import { mkdtempSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterEach, describe, expect, it } from "vitest";
import { freePort } from "../../libs/redis/redis-server-process.js";
import { TsProcess } from "../../test/helpers/child-process.js";
import { waitFor } from "../../test/helpers/test-redis.js";

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
    await child.waitForOutput("listening on", 90_000);
    expect(child.log).toContain("started redis-server");
    const base = `http://127.0.0.1:${port}`;
    expect((await fetch(`${base}/healthz`)).status).toBe(200);
    const ready = await waitFor(
      async () => (await (await fetch(`${base}/readyz`)).json()) as { ok?: boolean },
      (report) => report.ok === true,
      { timeoutMs: 20_000, intervalMs: 200 },
    );
    expect(ready).toMatchObject({ ok: true, checks: { redis: true } });
    const metrics = await (await fetch(`${base}/metrics`)).text();
    expect(metrics).toContain("process_cpu_seconds_total");
    expect(metrics).toContain("stream_entries_processed_total");
    const stopping = Date.now();
    expect(await child.kill("SIGTERM")).toBe(0);
    expect(Date.now() - stopping).toBeLessThan(10_000);
  }, 120_000);
});
