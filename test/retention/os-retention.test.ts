import { afterEach, beforeEach, describe, expect, it } from "vitest";
import { OsDeviceKeys, resultKeyOf } from "../../libs/os-store/os-keys.js";
import { osRetentionIndex } from "../../libs/retention/retention-keys.js";
import {
  expireOsDevice,
  type OsRetentionSettings,
} from "../../services/run-resolver/retention/os-retention.js";
import { createTestRedis, type TestRedis } from "../helpers/test-redis.js";

/**
 * Issue 16 item 2, OS side: terminal runs and everything hanging off them leave the store once past retention;
 * nothing younger and no pending run does. Records are written in the store layout (docs/architecture.md, "OS
 * store") with timestamps placed on either side of the cut, so no test waits for the clock.
 */
const RETENTION_MS = 60_000;
const settings: OsRetentionSettings = { retentionMs: RETENTION_MS, recheckMs: 5_000, sweepIntervalMs: 1_000 };
let t: TestRedis;

beforeEach(() => {
  t = createTestRedis("os-retention");
});
afterEach(async () => t.cleanup());

/** A run created at `createdAt`, in `state`, resolved by a result stored at `storedAt` when given. */
async function seed(
  device: OsDeviceKeys,
  runId: string,
  state: string,
  createdAt: number,
  storedAt?: number,
) {
  const run: Record<string, string | number> = {
    runId,
    deviceId: device.deviceId,
    state,
    requestId: `req-${runId}`,
    idempotencyKey: `key-${runId}`,
    deliveryId: `del-${runId}`,
    createdAt,
  };
  const writes = t.redis
    .multi()
    .set(device.request(`req-${runId}`), runId)
    .set(device.idempotencyKey(`key-${runId}`), runId)
    .set(device.delivery(`del-${runId}`), runId)
    .zadd(device.runs, createdAt, runId)
    // The router's deadline index keeps a run resolved before its deadline until it comes due there.
    .zadd(device.runDeadlines, createdAt + 60_000, runId);
  if (state === "pending") writes.zadd(device.pendingRuns, createdAt, runId);
  if (storedAt !== undefined) {
    const resultKey = resultKeyOf("instance", `result-${runId}`);
    // A resolved run names its result by resultId and the instance it was received by.
    run.resultId = `result-${runId}`;
    run.serverInstanceId = "instance";
    writes
      .hset(device.result(resultKey), { resultId: `result-${runId}`, storedAt, fullText: "an answer" })
      .set(device.resultId(`result-${runId}`), resultKey)
      .hset(device.outbox(resultKey), {
        state: "played",
        playbackId: `pb-${runId}`,
        noticePlaybackId: `nt-${runId}`,
      })
      .hset(device.playback(`pb-${runId}`), { resultKey, kind: "answer", state: "played" })
      .hset(device.playback(`nt-${runId}`), { resultKey, kind: "notice", state: "played" });
  }
  await writes.hset(device.run(runId), run).exec();
}

/** Every key the seeded run owns, present or not. */
function keysOf(device: OsDeviceKeys, runId: string): string[] {
  const resultKey = resultKeyOf("instance", `result-${runId}`);
  return [
    device.run(runId),
    device.request(`req-${runId}`),
    device.idempotencyKey(`key-${runId}`),
    device.delivery(`del-${runId}`),
    device.result(resultKey),
    device.resultId(`result-${runId}`),
    device.outbox(resultKey),
    device.playback(`pb-${runId}`),
    device.playback(`nt-${runId}`),
  ];
}

const existing = async (keys: string[]) =>
  (await Promise.all(keys.map((key) => t.redis.exists(key)))).reduce((a, b) => a + b, 0);

describe("the OS expiry step", () => {
  it("removes terminal runs past retention with their lookups, result, outbox and playbacks; keeps pending and younger ones", async () => {
    const device = new OsDeviceKeys(t.keys, "lamp-retention");
    const now = Date.now();
    const old = now - RETENTION_MS - 1_000;
    const young = now - RETENTION_MS / 2;
    await seed(device, "old-resolved", "resolved", old, old + 10);
    await seed(device, "old-unknown", "unknown", old);
    await seed(device, "old-pending", "pending", old);
    await seed(device, "old-run-young-result", "resolved", old, young);
    await seed(device, "young-resolved", "resolved", young, young + 10);

    const next = await expireOsDevice(t.redis, t.keys, device.deviceId, settings, now);

    expect(await existing(keysOf(device, "old-resolved"))).toBe(0);
    expect(await existing(keysOf(device, "old-unknown"))).toBe(0);
    expect(await existing(keysOf(device, "old-pending"))).toBe(4);
    expect(await existing(keysOf(device, "old-run-young-result"))).toBe(9);
    expect(await existing(keysOf(device, "young-resolved"))).toBe(9);
    expect(await t.redis.zrange(device.runs, 0, -1)).toEqual([
      "old-pending",
      "old-run-young-result",
      "young-resolved",
    ]);
    expect(await t.redis.zrange(device.pendingRuns, 0, -1)).toEqual(["old-pending"]);
    expect(await t.redis.zrange(device.runDeadlines, 0, -1)).toEqual([
      "old-pending",
      "old-run-young-result",
      "young-resolved",
    ]);
    // Due again for the pending run's recheck, the earliest of what is left.
    expect(next).toBe(now + settings.recheckMs);
  });

  it("removes the router's claim of a result identity with the run claimed for it, stored or not", async () => {
    const device = new OsDeviceKeys(t.keys, "lamp-retention-claims");
    const now = Date.now();
    const old = now - RETENTION_MS - 1_000;
    await seed(device, "old-resolved", "resolved", old, old + 10);
    await seed(device, "old-ended-after-claim", "unknown", old);
    const claimed = {
      "old-resolved": resultKeyOf("instance", "result-old-resolved"),
      "old-ended-after-claim": resultKeyOf("instance", "result-never-stored"),
    };
    for (const [runId, resultKey] of Object.entries(claimed))
      await t.redis
        .multi()
        .hset(device.run(runId), "routedAs", resultKey)
        .set(device.resultClaim(resultKey), "content-hash")
        .exec();

    await expireOsDevice(t.redis, t.keys, device.deviceId, settings, now);

    expect(await existing(Object.values(claimed).map((resultKey) => device.resultClaim(resultKey)))).toBe(0);
    expect(await t.redis.zrange(device.runs, 0, -1)).toEqual([]);
  });

  it("trims the rejection, protocol-error and held-expired logs by entry age; an emptied log forgets its identities", async () => {
    const device = new OsDeviceKeys(t.keys, "lamp-logs");
    const now = Date.now();
    const oldId = `${now - RETENTION_MS - 1_000}-0`;
    const youngId = `${now - 1_000}-0`;
    await t.redis.xadd(device.rejections, oldId, "payload", "{}");
    await t.redis.xadd(device.rejections, youngId, "payload", "{}");
    await t.redis.sadd(`${device.rejections}-ids`, "old", "young");
    await t.redis.xadd(device.protocolErrors, oldId, "payload", "{}");
    await t.redis.sadd(`${device.protocolErrors}-ids`, "old");
    await t.redis.xadd(device.heldExpired, oldId, "payload", "{}");

    const next = await expireOsDevice(t.redis, t.keys, device.deviceId, settings, now);

    expect((await t.redis.xrange(device.rejections, "-", "+")).map(([id]) => id)).toEqual([youngId]);
    expect(await t.redis.scard(`${device.rejections}-ids`)).toBe(2);
    expect(
      await t.redis.exists(device.protocolErrors, `${device.protocolErrors}-ids`, device.heldExpired),
    ).toBe(0);
    expect(next).toBe(now - 1_000 + RETENTION_MS);
  });

  it("trims the run.update log by each update's age, oldest first, and keeps its ids increasing afterwards", async () => {
    const device = new OsDeviceKeys(t.keys, "lamp-updates");
    const now = Date.now();
    const update = (at: number) =>
      JSON.stringify({ runId: "r", requestId: "q", state: "resolved", change: "resolved", at });
    for (const at of [now - RETENTION_MS - 3_000, now - RETENTION_MS - 2_000, now - 2_000, now - 1_000])
      await t.redis.xadd(device.runUpdates, "0-*", "payload", update(at));

    const next = await expireOsDevice(t.redis, t.keys, device.deviceId, settings, now);

    expect((await t.redis.xrange(device.runUpdates, "-", "+")).map(([id]) => id)).toEqual(["0-3", "0-4"]);
    expect(next).toBe(now - 2_000 + RETENTION_MS);
    // Once every update is past retention the log is empty but still there: the next update is 0-5, not 0-1.
    expect(
      await expireOsDevice(t.redis, t.keys, device.deviceId, settings, now + RETENTION_MS),
    ).toBeUndefined();
    expect(await t.redis.xlen(device.runUpdates)).toBe(0);
    expect(await t.redis.xadd(device.runUpdates, "0-*", "payload", update(now))).toBe("0-5");
  });

  it("answers nothing left once a device retains nothing", async () => {
    const device = new OsDeviceKeys(t.keys, "lamp-empty");
    const now = Date.now();
    await seed(device, "gone", "resolved", now - RETENTION_MS - 5, now - RETENTION_MS - 1);
    expect(await expireOsDevice(t.redis, t.keys, device.deviceId, settings, now)).toBeUndefined();
    expect(await t.redis.exists(device.runs)).toBe(0);
  });
});

describe("the OS retention index", () => {
  it("sweeps only due devices, re-lists each by its next due time and drops a device that retains nothing", async () => {
    const index = osRetentionIndex(t.redis, t.keys);
    const now = Date.now();
    const emptied = new OsDeviceKeys(t.keys, "lamp-emptied");
    const kept = new OsDeviceKeys(t.keys, "lamp-kept");
    const later = new OsDeviceKeys(t.keys, "lamp-later");
    await seed(emptied, "r1", "resolved", now - RETENTION_MS - 10, now - RETENTION_MS - 5);
    await seed(kept, "r2", "resolved", now - RETENTION_MS - 10, now - RETENTION_MS - 5);
    await seed(kept, "r3", "resolved", now - 1_000, now - 900);
    await seed(later, "r4", "resolved", now - RETENTION_MS - 10, now - RETENTION_MS - 5);
    await index.list(emptied.deviceId, now - 1);
    await index.list(kept.deviceId, now - 1);
    await index.list(later.deviceId, now + 3_600_000);

    const visited = await index.sweep((deviceId) => expireOsDevice(t.redis, t.keys, deviceId, settings), now);

    expect(visited).toBe(2);
    expect(await t.redis.zrange(index.key, 0, -1, "WITHSCORES")).toEqual([
      kept.deviceId,
      String(now - 1_000 + RETENTION_MS),
      later.deviceId,
      String(now + 3_600_000),
    ]);
    expect(await t.redis.exists(kept.run("r2"), emptied.run("r1"))).toBe(0);
    expect(await t.redis.exists(later.run("r4"), kept.run("r3"))).toBe(2);
  });

  it("a run registered while the sweep takes its device out is seen by the second look, and the device stays listed", async () => {
    const index = osRetentionIndex(t.redis, t.keys);
    const device = new OsDeviceKeys(t.keys, "lamp-race");
    const now = Date.now();
    await index.list(device.deviceId, now - 1);
    let looks = 0;
    await index.sweep(async (deviceId) => {
      looks += 1;
      const next = await expireOsDevice(t.redis, t.keys, deviceId, settings);
      // A writer between this step and the ZREM: it stores a run, then its ZADD NX is a no-op (still listed).
      if (looks === 1) {
        await seed(device, "raced", "pending", Date.now());
        await index.list(deviceId, Date.now());
      }
      return next;
    }, now);
    expect(looks).toBe(2);
    expect(await t.redis.zscore(index.key, device.deviceId)).not.toBeNull();
  });
});
