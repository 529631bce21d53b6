import { Redis } from "ioredis";
import { afterEach, describe, expect, it } from "vitest";
import { STREAM_CATALOG } from "../../libs/contract/catalog.js";
import { engineRecordEntry, type EngineRecord } from "../../libs/contract/pipeline-payloads.js";
import { AgentKeys } from "../../libs/redis/agent-keys.js";
import { Keyspace } from "../../libs/redis/keyspace.js";
import { freePort, RedisServerProcess } from "../../libs/redis/redis-server-process.js";
import { PAYLOAD_FIELD } from "../../libs/streams/stream-writer.js";
import { claudeStreamWorkload } from "../../bench/extractor-workloads.js";
import { TsProcess } from "../helpers/child-process.js";
import { waitFor } from "../helpers/test-redis.js";

const AGENT = "outage";
const SECRET = "outage-secret-0123456789abcdef-0123";

let host: TsProcess | undefined;
let server: RedisServerProcess | undefined;
let client: Redis | undefined;
afterEach(async () => {
  client?.disconnect();
  await host?.kill("SIGKILL");
  await server?.stop();
});

async function timed(url: string): Promise<{ status: number; body: unknown; ms: number }> {
  const started = Date.now();
  const response = await fetch(url, { signal: AbortSignal.timeout(2_000) });
  return { status: response.status, body: await response.json(), ms: Date.now() - started };
}

async function addRecords(redis: Redis, streamKey: string, records: EngineRecord[]): Promise<void> {
  const batch = redis.pipeline();
  for (const record of records)
    batch.xadd(streamKey, "*", PAYLOAD_FIELD, JSON.stringify(engineRecordEntry([record])));
  await batch.exec();
}

describe("a Redis outage", () => {
  it("answers 503 at once, logs one line each way, and completes every accepted entry after Redis is back", async () => {
    server = await RedisServerProcess.start({ appendonly: true, appendfsync: "always" });
    client = new Redis(server.url, { maxRetriesPerRequest: null });
    client.on("error", () => undefined);
    const keys = new Keyspace("outage");
    const streamKey = keys.stream(STREAM_CATALOG.engineRecords.name);
    const records = [...claudeStreamWorkload(3_000).generate(AGENT)];
    const accepted = records.slice(0, 2_000);
    await addRecords(client, streamKey, accepted);

    const port = await freePort();
    host = new TsProcess("test/resilience/outage-host.ts", {
      REDIS_URL: server.url,
      KEY_PREFIX: keys.prefix,
      STREAM_PARTITIONS: String(keys.partitions),
      HOST: "127.0.0.1",
      PORT: String(port),
      LOG_LEVEL: "info",
      AUTH_JWT_SECRET: SECRET,
      STREAM_BATCH_SIZE: "8",
      STREAM_BLOCK_MS: "200",
      STREAM_RETRY_DELAY_MS: "100",
    });
    await host.waitForOutput('"msg":"services started"', 60_000);
    const base = `http://127.0.0.1:${port}`;
    const seqKey = new AgentKeys(keys, AGENT).runtime(`${AGENT}-rt`);
    const appliedSeq = async () => Number((await client?.hget(seqKey, "seq")) ?? 0);
    expect((await timed(`${base}/v1/runs/r1`)).status).toBe(401);

    const logBefore = host.log.length;
    await server.kill();
    await host.waitForOutput("redis unavailable", 5_000);
    const ready = await timed(`${base}/readyz`);
    expect(ready.status).toBe(503);
    expect(ready.body).toMatchObject({ ok: false, checks: { redis: false } });
    expect(ready.ms).toBeLessThan(1_000);
    const api = await timed(`${base}/v1/runs/r1`);
    expect(api.status).toBe(503);
    expect(api.body).toMatchObject({ error: { code: "UNAVAILABLE" } });
    expect(api.ms).toBeLessThan(500);

    await server.restart();
    await host.waitForOutput("redis back", 10_000);
    await addRecords(client, streamKey, records.slice(accepted.length));
    const last = (records.at(-1) as { seq: number }).seq;
    expect(await waitFor(appliedSeq, (seq) => seq >= last, { timeoutMs: 60_000, intervalMs: 200 })).toBe(
      last,
    );
    expect((await timed(`${base}/readyz`)).status).toBe(200);

    const outageLog = host.log
      .slice(logBefore)
      .split("\n")
      .filter((line) => line.trim().length > 0);
    expect(outageLog.filter((line) => line.includes("redis unavailable"))).toHaveLength(1);
    expect(outageLog.filter((line) => line.includes("redis back"))).toHaveLength(1);
    expect(host.log).not.toContain("Unhandled error event");
    // Records the extractor met out of order while consumers caught up are retried (one warning each, bounded by
    // the records); anything else logged during the outage counts.
    const noise = outageLog.filter((line) => !line.includes("arrived before seq"));
    expect(noise.length, noise.join("\n")).toBeLessThan(12);
    expect(await host.kill("SIGTERM")).toBe(0);
  }, 180_000);

  it("drains and exits 0 at once when SIGTERM arrives while Redis is down", async () => {
    server = await RedisServerProcess.start({ appendonly: true });
    const port = await freePort();
    host = new TsProcess("test/resilience/outage-host.ts", {
      REDIS_URL: server.url,
      KEY_PREFIX: "outage-stop",
      PORT: String(port),
      AUTH_JWT_SECRET: SECRET,
      SHUTDOWN_TIMEOUT_MS: "10000",
    });
    await host.waitForOutput('"msg":"services started"', 60_000);
    await server.kill();
    await host.waitForOutput("redis unavailable", 5_000);
    const started = Date.now();
    expect(await host.kill("SIGTERM"), host.log.slice(-2_000)).toBe(0);
    expect(Date.now() - started).toBeLessThan(3_000);
  }, 180_000);

  // A fresh clone compiles every service on its first boot, slow beside a busy suite: the boot alone may take 90 s.
  it("exits 1 at the deadline, in one line, when a drain cannot finish without Redis (unwritten engine records)", async () => {
    server = await RedisServerProcess.start({ appendonly: true });
    host = new TsProcess("services/all-in-one/main.ts", {
      REDIS_URL: server.url,
      KEY_PREFIX: "outage-deadline",
      PORT: String(await freePort()),
      SHUTDOWN_TIMEOUT_MS: "3000",
    });
    await host.waitForOutput("listening on", 90_000);
    await server.kill();
    await host.waitForOutput("redis unavailable", 5_000);
    const started = Date.now();
    expect(await host.kill("SIGTERM")).toBe(1);
    expect(Date.now() - started).toBeLessThan(6_000);
    expect(host.log).toContain("all-in-one: not drained within 3000 ms; exiting anyway");
  }, 180_000);
});
