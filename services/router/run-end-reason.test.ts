import { describe, expect, it } from "vitest";
import { OS_END_REASONS } from "../../libs/contract/run-update.js";
import { deadlineEndReason, receiptMayStillMove } from "./run-end-reason.js";
import type { RunRecord } from "../../libs/os-store/run-record.js";

describe("why a run still pending at its deadline ends", () => {
  it.each([
    {
      case: "a held result names it",
      deliveryId: undefined,
      held: true,
      asked: true,
      reason: OS_END_REASONS.resultHeld,
    },
    {
      case: "held, receipt bound",
      deliveryId: "d-1",
      held: true,
      asked: true,
      reason: OS_END_REASONS.resultHeld,
    },
    {
      case: "held, Harness not asked",
      deliveryId: "d-1",
      held: true,
      asked: false,
      reason: OS_END_REASONS.resultHeld,
    },
    {
      case: "no receipt bound",
      deliveryId: undefined,
      held: false,
      asked: true,
      reason: OS_END_REASONS.receiptNotFound,
    },
    {
      case: "receipt bound, no result",
      deliveryId: "d-1",
      held: false,
      asked: true,
      reason: OS_END_REASONS.resultNotReceived,
    },
    {
      case: "no live Harness link to ask",
      deliveryId: undefined,
      held: false,
      asked: false,
      reason: OS_END_REASONS.harnessUnreachable,
    },
  ])("$case: $reason", ({ deliveryId, held, asked, reason }) => {
    expect(deadlineEndReason({ deliveryId }, held, asked)).toBe(reason);
  });
});

describe("which receipts are worth asking the Harness for again", () => {
  it.each<{ receiptState: RunRecord["receiptState"]; ask: boolean }>([
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
