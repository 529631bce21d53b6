import { describe, expect, it } from "vitest";
import type { Outcome } from "../../libs/contract/turn-result.js";
import { helloResultSchema, resyncSchema } from "../../libs/contract/harness-wire.js";
import { HarnessDeviceKeys } from "../../libs/harness-store/harness-keys.js";
import { waitFor } from "../helpers/test-redis.js";
import {
  expireHarnessDevice,
  type HarnessRetentionSettings,
} from "../../services/result-producer/retention/harness-retention.js";
import {
  HarnessPeer,
  eventFloor,
  eventHead,
  evidenceSettled,
  loggedEvents,
  receiptOf,
  storeCounts,
  useHarnessStack,
  type HarnessStack,
  type ReceiptRef,
} from "./harness-fixture.js";

/**
 * Issue 12 item 3: the time-based trims of the Harness store. Receipts (on a reserve), results and the device event
 * log (by the device's retention sweep step, which the result-producer runs from its retention index; issue 16 took
 * the age checks out of every apply) drop what is older than their retention and nothing younger. Each retention is set to its smallest allowed value, 1 s (libs/harness-store/retention-config.ts), in a
 * stack of its own so only the path under test trims. Every test makes an old entry, then a young one once the old
 * is half a retention old, then triggers the trim once the old one is past retention: the young one is then about
 * half a retention old, and the stored timestamps prove which side of the cut each entry was on.
 */
const MINIMUM_RETENTION_SECONDS = "1";
const RETENTION_MS = Number(MINIMUM_RETENTION_SECONDS) * 1_000;
const UNLIMITED_RATE = { RATE_LIMIT_BURST: "1000", RATE_LIMIT_PER_SECOND: "1000" };

/** Polls the clock until `stamp` (epoch ms, as a Lua step stored it) is more than `ageMs` old: time is under test. */
async function untilOlderThan(stamp: number, ageMs: number): Promise<void> {
  const now = await waitFor(
    () => Date.now(),
    (now) => now - stamp > ageMs,
    { timeoutMs: ageMs + 5_000 },
  );
  if (now - stamp <= ageMs) throw new Error(`clock never passed ${stamp} + ${ageMs} ms`);
}

/** One input sent, delivered and consumed: its receipt is `started`, still unresolved. */
async function startedInput(s: HarnessStack, peer: HarnessPeer, deviceId: string, key: string) {
  const receipt: ReceiptRef = receiptOf(await peer.send(key));
  await s.feed.delivered(deviceId, receipt);
  await s.feed.consumed(deviceId, receipt);
  return receipt;
}

/** One input sent, delivered, consumed and ended by a result with `outcome`. */
async function answeredInput(
  s: HarnessStack,
  peer: HarnessPeer,
  deviceId: string,
  key: string,
  outcome: Outcome = "completed",
) {
  const receipt = await startedInput(s, peer, deviceId, key);
  await s.feed.completed(`turn-${key}`, [{ deviceId, receipt }], `Done: ${key}.`, outcome);
  return receipt;
}

/** The resultId of every turn.result the peer received, in order. */
const resultIdsOf = (peer: HarnessPeer) =>
  peer.events("turn.result").map((frame) => (frame.payload as { resultId: string }).resultId);

/** The retention sweep's step for one device now, with `settings` for the retention under test. */
async function sweepDevice(
  s: HarnessStack,
  deviceId: string,
  settings: Partial<HarnessRetentionSettings>,
): Promise<number> {
  const now = Date.now();
  const DAY_MS = 86_400_000;
  await expireHarnessDevice(
    s.t.redis,
    s.t.keys,
    deviceId,
    {
      eventRetentionMs: DAY_MS,
      resultRetentionMs: DAY_MS,
      receiptRetentionMs: DAY_MS,
      sweepIntervalMs: 0,
      ...settings,
    },
    now,
  );
  return now;
}

const zscore = async (s: HarnessStack, key: string, member: string) => {
  const score = await s.t.redis.zscore(key, member);
  if (score === null) throw new Error(`${member} is not in ${key}`);
  return Number(score);
};

describe("receipts past RECEIPT_RETENTION_SECONDS", () => {
  const s = useHarnessStack("hgw-receipt-ret", {
    RECEIPT_RETENTION_SECONDS: MINIMUM_RETENTION_SECONDS,
    ...UNLIMITED_RATE,
  });

  it("a reserve evicts terminal receipts and failed-result members older than retention; a younger terminal receipt and every unresolved one stay", async () => {
    const deviceId = "lamp-receipt-retention";
    const device = new HarnessDeviceKeys(s.t.keys, deviceId);
    const peer = await HarnessPeer.connect(s.harness.url, deviceId);
    await peer.hello();

    receiptOf(await peer.send("old-queued"));
    await startedInput(s, peer, deviceId, "old-started");
    await answeredInput(s, peer, deviceId, "old-completed", "completed");
    await answeredInput(s, peer, deviceId, "old-failed", "failed");
    const rejected = receiptOf(await peer.send("old-rejected"));
    await s.feed.emit({
      kind: "input.rejected",
      ...s.feed.base(`rejected-${rejected.deliveryId}`),
      deviceId,
      ...rejected,
      reason: "the engine refused it",
    });
    const unknown = receiptOf(await peer.send("old-unknown"));
    await s.feed.emit({
      kind: "evidence.missing",
      ...s.feed.base(`missing-${unknown.deliveryId}`),
      members: [{ deviceId, ...unknown }],
      reason: "ENGINE_EXITED",
    });
    await evidenceSettled(s.t);
    const expectedStates = {
      "old-queued": "queued",
      "old-started": "started",
      "old-completed": "completed",
      // A failed result leaves its member `started` on the wire, but the input is over (evictable).
      "old-failed": "started",
      "old-rejected": "rejected",
      "old-unknown": "unknown",
    };
    for (const [key, state] of Object.entries(expectedStates))
      expect(await peer.receipt(key), key).toMatchObject({ receipt: { idempotencyKey: key, state } });

    const evictable = ["old-completed", "old-failed", "old-rejected", "old-unknown"];
    const unresolved = ["old-queued", "old-started"];
    const oldTerminalAt = await Promise.all(
      evictable.map((key) => zscore(s, device.terminalReservations, key)),
    );
    const newestOld = Math.max(...oldTerminalAt);

    await untilOlderThan(newestOld, RETENTION_MS / 2);
    await answeredInput(s, peer, deviceId, "young-completed", "completed");
    await evidenceSettled(s.t);
    expect(await peer.receipt("young-completed")).toMatchObject({ receipt: { state: "completed" } });
    const youngTerminalAt = await zscore(s, device.terminalReservations, "young-completed");

    await untilOlderThan(newestOld, RETENTION_MS);
    expect(await peer.send("trigger")).toMatchObject({ status: "accepted", receipt: { state: "queued" } });
    const cut = (await zscore(s, device.reservations, "trigger")) - RETENTION_MS;
    // Which side of the cut each entry was on when the reserve ran (its `now` is the trigger's reservedAt).
    for (const at of oldTerminalAt) expect(at).toBeLessThanOrEqual(cut);
    expect(youngTerminalAt).toBeGreaterThan(cut);
    for (const key of unresolved) expect(await zscore(s, device.reservations, key)).toBeLessThanOrEqual(cut);

    for (const key of evictable) {
      expect(await peer.receipt(key), key).toMatchObject({ receipt: null });
      expect(await s.t.redis.exists(device.reservation(key)), key).toBe(0);
      expect(await s.t.redis.zscore(device.reservations, key), key).toBeNull();
    }
    const kept = {
      "old-queued": "queued",
      "old-started": "started",
      "young-completed": "completed",
      trigger: "queued",
    };
    for (const [key, state] of Object.entries(kept))
      expect(await peer.receipt(key), key).toMatchObject({
        receipt: { idempotencyKey: key, state },
      });
    expect((await s.t.redis.zrange(device.reservations, 0, -1)).sort()).toEqual(Object.keys(kept).sort());
    expect(await s.t.redis.zrange(device.terminalReservations, 0, -1)).toEqual(["young-completed"]);
    expect((await storeCounts(s.t, deviceId)).reservations).toBe(4);
    await peer.close();
  });
});

describe("results past RESULT_RETENTION_SECONDS", () => {
  const s = useHarnessStack("hgw-result-ret", {
    RESULT_RETENTION_SECONDS: MINIMUM_RETENTION_SECONDS,
    ...UNLIMITED_RATE,
  });

  it("the sweep removes results older than retention with their index entry, keeps a younger one, and a resumed peer gets it replayed", async () => {
    const deviceId = "lamp-result-retention";
    const device = new HarnessDeviceKeys(s.t.keys, deviceId);
    const peer = await HarnessPeer.connect(s.harness.url, deviceId);
    const hello = helloResultSchema.parse(await peer.hello());
    const storedAt = async (resultId: string) =>
      Number(await s.t.redis.hget(device.result(resultId), "storedAt"));

    await answeredInput(s, peer, deviceId, "old");
    await peer.waitForEvents("turn.result", 1);
    const [oldId = ""] = resultIdsOf(peer);
    const oldAt = await storedAt(oldId);

    await untilOlderThan(oldAt, RETENTION_MS / 2);
    await answeredInput(s, peer, deviceId, "young");
    await peer.waitForEvents("turn.result", 2);
    const youngId = resultIdsOf(peer)[1] ?? "";
    const youngAt = await storedAt(youngId);

    await untilOlderThan(oldAt, RETENTION_MS);
    await answeredInput(s, peer, deviceId, "trigger");
    await peer.waitForEvents("turn.result", 3);
    await evidenceSettled(s.t);
    const triggerId = resultIdsOf(peer)[2] ?? "";
    expect(await s.t.redis.exists(device.result(oldId))).toBe(1);
    const cut = (await sweepDevice(s, deviceId, { resultRetentionMs: RETENTION_MS })) - RETENTION_MS;
    expect(oldAt).toBeLessThan(cut);
    expect(youngAt).toBeGreaterThanOrEqual(cut);

    expect(await s.t.redis.exists(device.result(oldId))).toBe(0);
    expect(await s.t.redis.zscore(device.results, oldId)).toBeNull();
    expect(await s.t.redis.exists(device.result(youngId))).toBe(1);
    expect(await s.t.redis.zrange(device.results, 0, -1)).toEqual([youngId, triggerId]);

    // A peer resuming from the start of the log gets the young result replayed byte for byte; the removed one is
    // not sent although its log entry is still retained.
    const resumed = await HarnessPeer.connect(s.harness.url, deviceId);
    const answer = helloResultSchema.parse(
      await resumed.hello(undefined, { serverInstanceId: hello.serverInstanceId, cursor: 0 }),
    );
    expect(answer.resumed).toBe(true);
    await resumed.drained();
    expect(resultIdsOf(resumed)).toEqual([youngId, triggerId]);
    expect(resumed.resultPayloadBytes()).toEqual([
      await s.t.redis.hget(device.result(youngId), "payload"),
      await s.t.redis.hget(device.result(triggerId), "payload"),
    ]);
    await resumed.close();
    await peer.close();
  });
});

describe("the per-device event log past EVENT_RETENTION_SECONDS", () => {
  const s = useHarnessStack("hgw-event-ret", {
    EVENT_RETENTION_SECONDS: MINIMUM_RETENTION_SECONDS,
    ...UNLIMITED_RATE,
  });

  it("the sweep trims events older than retention and raises the floor; below it is cursor_too_old with the retained results, at it every younger event is replayed", async () => {
    const deviceId = "lamp-event-retention";
    const device = new HarnessDeviceKeys(s.t.keys, deviceId);
    const peer = await HarnessPeer.connect(s.harness.url, deviceId);
    const hello = helloResultSchema.parse(await peer.hello());
    const eventAt = async (eventId: number) => {
      const logged = (await loggedEvents(s.t, deviceId)).find((event) => event.eventId === eventId);
      if (!logged) throw new Error(`event ${eventId} is not logged`);
      return logged.body.at;
    };
    const eventIds = (from: number, to: number) => Array.from({ length: to - from + 1 }, (_, i) => from + i);

    await answeredInput(s, peer, deviceId, "old");
    await peer.waitForEvents("turn.result", 1);
    await evidenceSettled(s.t);
    const oldHead = await eventHead(s.t, deviceId);
    const oldAt = await Promise.all(eventIds(1, oldHead).map(eventAt));
    const newestOld = Math.max(...oldAt);

    await untilOlderThan(newestOld, RETENTION_MS / 2);
    await answeredInput(s, peer, deviceId, "young");
    await peer.waitForEvents("turn.result", 2);
    await evidenceSettled(s.t);
    const youngHead = await eventHead(s.t, deviceId);
    const youngAt = await Promise.all(eventIds(oldHead + 1, youngHead).map(eventAt));
    // Nothing was trimmed before the trigger: the young events came while the old ones were within retention.
    expect(await eventFloor(s.t, deviceId)).toBe(0);

    await untilOlderThan(newestOld, RETENTION_MS);
    const head = youngHead;
    const cut = (await sweepDevice(s, deviceId, { eventRetentionMs: RETENTION_MS })) - RETENTION_MS;
    for (const at of oldAt) expect(at).toBeLessThan(cut);
    for (const at of youngAt) expect(at).toBeGreaterThanOrEqual(cut);

    const floor = await eventFloor(s.t, deviceId);
    expect(floor).toBe(oldHead);
    expect((await loggedEvents(s.t, deviceId)).map(({ eventId }) => eventId)).toEqual(
      eventIds(oldHead + 1, head),
    );
    const results = await s.t.redis.zrange(device.results, 0, -1);
    expect(results).toHaveLength(2);

    const below = await HarnessPeer.connect(s.harness.url, deviceId);
    const refused = helloResultSchema.parse(
      await below.hello(undefined, { serverInstanceId: hello.serverInstanceId, cursor: floor - 1 }),
    );
    expect(refused.resumed).toBe(false);
    const resent = await below.waitForEvents("turn.result", 2);
    expect(below.frames.map((frame) => frame.type)).toEqual(["hello_result", "resync", "event", "event"]);
    expect(resyncSchema.parse(below.frames[1])).toEqual({
      type: "resync",
      reason: "cursor_too_old",
      serverInstanceId: hello.serverInstanceId,
      cursor: head,
    });
    // Every retained result, the old one whose log entries were trimmed included, with fresh eventIds.
    expect(resent.map((frame) => frame.eventId)).toEqual([head + 1, head + 2]);
    expect(resultIdsOf(below)).toEqual(results);
    expect(below.resultPayloadBytes()).toEqual(
      await Promise.all(results.map((resultId) => s.t.redis.hget(device.result(resultId), "payload"))),
    );
    await below.close();

    const atFloor = await HarnessPeer.connect(s.harness.url, deviceId);
    const resumed = helloResultSchema.parse(
      await atFloor.hello(undefined, { serverInstanceId: hello.serverInstanceId, cursor: floor }),
    );
    expect(resumed.resumed).toBe(true);
    await atFloor.drained();
    // Every event younger than retention is replayed, in order, none missing (the young result among them).
    expect(atFloor.events().map((frame) => frame.eventId)).toEqual(eventIds(floor + 1, head));
    expect(resultIdsOf(atFloor)).toEqual([results[1]]);
    await atFloor.close();
    await peer.close();
  });
});
