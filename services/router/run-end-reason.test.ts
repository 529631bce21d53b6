import { describe, expect, it } from "vitest";
import { OS_END_REASONS } from "../../libs/contract/run-update.js";
import { deadlineEndReason, receiptMayStillMove } from "./run-end-reason.js";

describe("why a run still pending at its deadline ends", () => {
  it.each([
    { case: "a held result names it", deliveryId: undefined, held: true, reason: OS_END_REASONS.resultHeld },
    { case: "held, receipt bound", deliveryId: "d-1", held: true, reason: OS_END_REASONS.resultHeld },
    { case: "no receipt bound", deliveryId: undefined, held: false, reason: OS_END_REASONS.receiptNotFound },
    {
      case: "receipt bound, no result",
      deliveryId: "d-1",
      held: false,
      reason: OS_END_REASONS.resultNotReceived,
    },
  ])("$case: $reason", ({ deliveryId, held, reason }) => {
    expect(deadlineEndReason({ deliveryId }, held)).toBe(reason);
  });
});

describe("which receipts are worth asking the Harness for again", () => {
  it.each([
    { receiptState: undefined, ask: true },
    { receiptState: "queued", ask: true },
    { receiptState: "delivered", ask: true },
    { receiptState: "started", ask: true },
    { receiptState: "completed", ask: false },
    { receiptState: "rejected", ask: false },
    { receiptState: "unknown", ask: false },
  ])("receipt $receiptState: ask $ask", ({ receiptState, ask }) => {
    expect(receiptMayStillMove({ receiptState })).toBe(ask);
  });
});
