import { afterEach, beforeEach, describe, expect, it } from "vitest";
import { HarnessDeviceKeys } from "../../libs/harness-store/harness-keys.js";
import { harnessRetentionIndex } from "../../libs/retention/retention-keys.js";
import {
  expireHarnessDevice,
  type HarnessRetentionSettings,
} from "../../services/result-producer/retention/harness-retention.js";
import { createTestRedis, type TestRedis } from "../helpers/test-redis.js";

/**
 * Issue 16 item 2, Harness side: a device that no longer acts still loses its results, log events and terminal
 * receipts once they are past retention (the trims inside apply-evidence and reserve only
 * run when it acts); nothing younger and no unresolved reservation goes. Records are written in the store layout
 * (docs/architecture.md, "Harness store") with timestamps on either side of each cut.
 */
const settings: HarnessRetentionSettings = {
  eventRetentionMs: 30_000,
  resultRetentionMs: 60_000,
  receiptRetentionMs: 90_000,
  sweepIntervalMs: 1_000,
};
let t: TestRedis;
beforeEach(() => {
  t = createTestRedis("h-retention");
});
afterEach(async () => t.cleanup());

async function seed(device: HarnessDeviceKeys, now: number) {
  const writes = t.redis.multi();
  [
    [1, now - settings.eventRetentionMs - 1],
    [2, now - settings.eventRetentionMs - 1],
    [3, now - 1_000],
  ].forEach(([id, at]) => {
    writes.xadd(device.eventLog, `0-${id}`, "e", JSON.stringify({ kind: "x", at }));
  });
  writes.set(device.eventSequence, 3);
  for (const [resultId, at] of [
    ["old-result", now - settings.resultRetentionMs - 1],
    ["young-result", now - 1_000],
  ] as const)
    writes.hset(device.result(resultId), { payload: "{}", storedAt: at }).zadd(device.results, at, resultId);
  for (const [key, at, terminal] of [
    ["old-terminal", now - settings.receiptRetentionMs - 1, true],
    ["young-terminal", now - 1_000, true],
    ["old-unresolved", now - settings.receiptRetentionMs - 10_000, false],
  ] as const) {
    writes.hset(device.reservation(key), { receipt: "{}" }).zadd(device.reservations, at, key);
    if (terminal) writes.zadd(device.terminalReservations, at, key);
  }
  await writes.exec();
}

describe("the Harness expiry step", () => {
  it("removes what is past each retention, keeps the rest and unresolved reservations, and answers the next due time", async () => {
    const device = new HarnessDeviceKeys(t.keys, "lamp-h-retention");
    const now = Date.now();
    await seed(device, now);

    const next = await expireHarnessDevice(t.redis, t.keys, "lamp-h-retention", settings, now);

    // The log keeps only the young event: its floor (the eventId before its oldest) rises to 2.
    expect((await t.redis.xrange(device.eventLog, "-", "+")).map(([id]) => id)).toEqual(["0-3"]);
    expect(await t.redis.zrange(device.results, 0, -1)).toEqual(["young-result"]);
    expect(await t.redis.exists(device.result("old-result"), device.result("young-result"))).toBe(1);
    expect(await t.redis.zrange(device.reservations, 0, -1)).toEqual(["old-unresolved", "young-terminal"]);
    expect(await t.redis.exists(device.reservation("old-terminal"))).toBe(0);
    expect(await t.redis.exists(device.reservation("old-unresolved"))).toBe(1);
    // The young event comes due first.
    expect(next).toBe(now - 1_000 + settings.eventRetentionMs);
  });

  it("a swept device that retains only an unresolved reservation leaves the index, the reservation untouched", async () => {
    const device = new HarnessDeviceKeys(t.keys, "lamp-h-quiet");
    const index = harnessRetentionIndex(t.redis, t.keys);
    const now = Date.now();
    await t.redis.hset(device.reservation("open"), { receipt: "{}" });
    await t.redis.zadd(device.reservations, now - 10 * settings.receiptRetentionMs, "open");
    await index.list("lamp-h-quiet", now - 1);
    await index.sweep((deviceId) => expireHarnessDevice(t.redis, t.keys, deviceId, settings), now);
    expect(await t.redis.zscore(index.key, "lamp-h-quiet")).toBeNull();
    expect(await t.redis.exists(device.reservation("open"))).toBe(1);
  });
});
