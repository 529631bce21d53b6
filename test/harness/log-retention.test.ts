import { describe, expect, it } from "vitest";
import { helloResultSchema, resyncSchema } from "../../libs/contract/harness-wire.js";
import {
  HarnessPeer,
  eventFloor,
  eventHead,
  evidenceSettled,
  loggedEvents,
  receiptOf,
  useHarnessStack,
  type ReceiptRef,
} from "./harness-fixture.js";

/**
 * Issue 12 item 3: the trim paths of the per-device event log. A log over its capacity drops its oldest events
 * and raises the floor; a peer resuming below the floor is resynced (`cursor_too_old`), one at the floor resumes,
 * and nothing above the floor is lost.
 */
const EVENT_CAPACITY = 6;
const s = useHarnessStack("hgw-retention", {
  EVENT_CAPACITY: String(EVENT_CAPACITY),
  RATE_LIMIT_BURST: "1000",
  RATE_LIMIT_PER_SECOND: "1000",
});

/** One input delivered, consumed and completed: several receipt.updated events, turn.started, result, turn.done. */
async function answered(peer: HarnessPeer, deviceId: string, key: string): Promise<void> {
  const receipt: ReceiptRef = receiptOf(await peer.send(key));
  await s.feed.delivered(deviceId, receipt);
  await s.feed.consumed(deviceId, receipt);
  await s.feed.completed(`turn-${key}`, [{ deviceId, receipt }], `Done: ${key}.`, "completed");
}

describe("the per-device event log past its capacity", () => {
  it("keeps the newest events, raises the floor, resyncs a cursor below it and resumes one at it", async () => {
    const deviceId = "lamp-retention";
    const peer = await HarnessPeer.connect(s.harness.url, deviceId);
    const hello = helloResultSchema.parse(await peer.hello());
    for (const key of ["a", "b", "c"]) await answered(peer, deviceId, key);
    await peer.waitForEvents("turn.result", 3);
    await evidenceSettled(s.t);
    await peer.close();

    const head = await eventHead(s.t, deviceId);
    const floor = await eventFloor(s.t, deviceId);
    const retained = (await loggedEvents(s.t, deviceId)).map(({ eventId }) => eventId);
    expect(head).toBeGreaterThan(EVENT_CAPACITY);
    expect(retained).toHaveLength(EVENT_CAPACITY);
    // Exactly the newest `capacity` events are kept, and the floor is the highest trimmed eventId.
    expect(retained).toEqual(
      Array.from({ length: EVENT_CAPACITY }, (_, index) => head - EVENT_CAPACITY + 1 + index),
    );
    expect(floor).toBe(head - EVENT_CAPACITY);

    const below = await HarnessPeer.connect(s.harness.url, deviceId);
    const refused = helloResultSchema.parse(
      await below.hello(undefined, { serverInstanceId: hello.serverInstanceId, cursor: floor - 1 }),
    );
    expect(refused.resumed).toBe(false);
    await below.waitForEvents("turn.result", 1);
    expect(resyncSchema.parse(below.frames.find((frame) => frame.type === "resync"))).toMatchObject({
      reason: "cursor_too_old",
      cursor: head,
    });
    await below.close();

    const atFloor = await HarnessPeer.connect(s.harness.url, deviceId);
    const resumed = helloResultSchema.parse(
      await atFloor.hello(undefined, { serverInstanceId: hello.serverInstanceId, cursor: floor }),
    );
    expect(resumed.resumed).toBe(true);
    await atFloor.drained();
    // Every retained event after the floor is replayed, in order, none missing.
    expect(atFloor.frames.filter((frame) => frame.type === "event").map((frame) => frame.eventId)).toEqual(
      retained,
    );
    await atFloor.close();
  });
});
