import { STREAM_CATALOG } from "../../libs/contract/catalog.js";
import { Redis } from "ioredis";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { HarnessDeviceKeys, undispatchedDevicesKey } from "../../libs/harness-store/harness-keys.js";

import { Keyspace } from "../../libs/redis/keyspace.js";
import { RedisServerProcess } from "../../libs/redis/redis-server-process.js";
import { ReservationStore } from "../../services/harness-gateway/reservations/reservation-store.js";
import { sweepUndispatched } from "../../services/harness-gateway/reservations/dispatch-sweep.js";
import { testLog } from "../helpers/test-redis.js";

/**
 * Issue 16 item 3: the dispatch sweep finds reservations left undispatched through an index, never a keyspace
 * SCAN. A private Redis, so `cmdstat_scan` counts nobody else's SCAN (other suites clean up with one).
 */
const RETAINED_KEYS = 20_000;
let server: RedisServerProcess;
let redis: Redis;
const keys = new Keyspace("sweep");

beforeAll(async () => {
  server = await RedisServerProcess.start({ appendonly: false });
  redis = new Redis(server.url);
  // Retained state of many other devices, laid out like the Harness store: nothing for the sweep to do.
  for (let start = 0; start < RETAINED_KEYS; start += 1_000) {
    const batch = redis.pipeline();
    for (let n = start; n < start + 1_000; n += 1)
      batch.hset(new HarnessDeviceKeys(keys, `idle-${n % 500}`).result(`r-${n}`), "payload", "{}");
    await batch.exec();
  }
}, 60_000);

afterAll(async () => {
  redis?.disconnect();
  await server?.stop();
});

async function scanCalls(): Promise<number> {
  const stats = await redis.info("commandstats");
  return Number(/cmdstat_scan:calls=(\d+)/.exec(stats)?.[1] ?? 0);
}

const request = (idempotencyKey: string) => ({
  type: "turn.send" as const,
  requestId: crypto.randomUUID(),
  machineId: "m-1",
  agentId: "a-1",
  idempotencyKey,
  text: "hello",
});

describe("the dispatch sweep", () => {
  it("dispatches a reservation a crash left undispatched, once, without a SCAN; then its device leaves the index", async () => {
    const store = new ReservationStore(redis, keys, { capacity: 10, retentionMs: 60_000 });
    const issuedAt = Math.floor(Date.now() / 1000);
    expect((await store.reserve("crashed-lamp", request("k-1"), "instance", issuedAt)).status).toBe(
      "accepted",
    );
    expect((await store.reserve("crashed-lamp", request("k-1"), "instance", issuedAt)).status).toBe(
      "duplicate",
    );
    const healthy = await store.reserve("healthy-lamp", request("k-2"), "instance", issuedAt);
    if (healthy.status !== "accepted") throw new Error(`healthy-lamp reserve: ${healthy.status}`);
    await store.dispatch("healthy-lamp", healthy.dispatch);
    expect(await redis.zrange(undispatchedDevicesKey(keys), 0, -1)).toEqual(["crashed-lamp", "healthy-lamp"]);
    const dispatchKey = keys.stream(STREAM_CATALOG.harnessDispatch.name);
    const dispatchedBefore = await redis.xlen(dispatchKey);
    const scansBefore = await scanCalls();

    expect(await sweepUndispatched(redis, keys, store, 0, testLog)).toBe(1);
    expect(await sweepUndispatched(redis, keys, store, 0, testLog)).toBe(0);

    expect(await scanCalls()).toBe(scansBefore);
    expect(await redis.xlen(dispatchKey)).toBe(dispatchedBefore + 1);
    const [latest] = (await redis.xrevrange(dispatchKey, "+", "-", "COUNT", 1)) as [string, string[]][];
    expect(JSON.parse(latest![1][1]!)).toMatchObject({ deviceId: "crashed-lamp", idempotencyKey: "k-1" });
    expect(await redis.zcard(undispatchedDevicesKey(keys))).toBe(0);
  });

  it("leaves a reservation younger than the minimum age alone and keeps its device listed by that age", async () => {
    const store = new ReservationStore(redis, keys, { capacity: 10, retentionMs: 60_000 });
    const issuedAt = Math.floor(Date.now() / 1000);
    expect((await store.reserve("young-lamp", request("k-3"), "instance", issuedAt)).status).toBe("accepted");
    const reservedAt = Number(
      await redis.zscore(new HarnessDeviceKeys(keys, "young-lamp").undispatched, "k-3"),
    );
    // Not due: the index read passes over it, and nothing moves its score.
    const swept = await sweepUndispatched(redis, keys, store, 60_000, testLog);
    expect(swept).toBe(0);
    expect(Number(await redis.zscore(undispatchedDevicesKey(keys), "young-lamp"))).toBe(reservedAt);
    expect(await redis.zcard(new HarnessDeviceKeys(keys, "young-lamp").undispatched)).toBe(1);
  });
});
