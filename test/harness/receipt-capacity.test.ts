import { describe, expect, it } from "vitest";
import { HarnessPeer, evidenceSettled, receiptOf, storeCounts, useHarnessStack } from "./harness-fixture.js";

/**
 * Issue 12 item 3, capacity that frees: a member of a failed or cancelled result keeps its `started` receipt on the
 * wire but no longer holds receipt capacity, so the device's next input is accepted rather than refused.
 */
const s = useHarnessStack("hgw-capacity", {
  RECEIPT_CAPACITY: "1",
  RATE_LIMIT_BURST: "1000",
  RATE_LIMIT_PER_SECOND: "1000",
});

describe("receipt capacity after a failed or cancelled result", () => {
  for (const outcome of ["failed", "cancelled"] as const)
    it(`at capacity 1, a ${outcome} result frees the slot: the next input is accepted, not BACKPRESSURE`, async () => {
      const deviceId = `lamp-capacity-${outcome}`;
      const peer = await HarnessPeer.connect(s.harness.url, deviceId);
      await peer.hello();
      const first = receiptOf(await peer.send("first"));
      // While the first input is unresolved it holds the only slot.
      expect(await peer.send("blocked")).toMatchObject({ error: { code: "BACKPRESSURE" } });
      await s.feed.delivered(deviceId, first);
      await s.feed.consumed(deviceId, first);
      await s.feed.completed(`turn-${outcome}`, [{ deviceId, receipt: first }], "It did not work.", outcome);
      await peer.waitForEvents("turn.result", 1);
      await evidenceSettled(s.t);
      // On the wire the receipt is unchanged (no receipt-outcome extension): still `started`.
      expect(await peer.receipt("first")).toMatchObject({ receipt: { state: "started" } });

      expect(await peer.send("second")).toMatchObject({
        type: "turn.send_result",
        status: "accepted",
        receipt: { idempotencyKey: "second", state: "queued" },
      });
      expect((await storeCounts(s.t, deviceId)).reservations).toBe(1);
      // The over input was the one evicted to make room; the new one is retained.
      expect(await peer.receipt("first")).toMatchObject({ receipt: null });
      expect(await peer.receipt("second")).toMatchObject({ receipt: { state: "queued" } });
      await peer.close();
    });

  it("an input still running is never evicted: at capacity the next input is BACKPRESSURE", async () => {
    const deviceId = "lamp-capacity-started";
    const peer = await HarnessPeer.connect(s.harness.url, deviceId);
    await peer.hello();
    const first = receiptOf(await peer.send("first"));
    await s.feed.delivered(deviceId, first);
    await s.feed.consumed(deviceId, first);
    await evidenceSettled(s.t);
    expect(await peer.send("second")).toMatchObject({ error: { code: "BACKPRESSURE" } });
    expect(await peer.receipt("first")).toMatchObject({ receipt: { state: "started" } });
    await peer.close();
  });
});
