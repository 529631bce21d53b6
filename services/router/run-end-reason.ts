import type { z } from "zod";
import type { receiptStateSchema } from "../../libs/contract/receipt.js";
import { OS_END_REASONS } from "../../libs/contract/run-update.js";
import type { RunRecord } from "../../libs/os-store/run-record.js";

type ReceiptState = z.infer<typeof receiptStateSchema>;

/** Receipt states that never move again (RECEIPT_RANK 3 in libs/redis/lua-includes/receipt-rank.lua). */
const FINAL_RECEIPT_STATES: ReadonlySet<string> = new Set<ReceiptState>(["completed", "rejected", "unknown"]);

/** True while asking the Harness for the run's receipt could still tell something new (absent or not final). */
export function receiptMayStillMove(run: Pick<RunRecord, "receiptState">): boolean {
  return run.receiptState === undefined || !FINAL_RECEIPT_STATES.has(run.receiptState);
}

export type DeadlineEndReason = (typeof OS_END_REASONS)[
  "receiptNotFound" | "resultHeld" | "resultNotReceived" | "harnessUnreachable"];

/**
 * Why a run still pending at its deadline ends: a result naming it was held for receipts that never bound; or the
 * Harness could not be asked (no live link for a whole further grace); or the Harness never gave a receipt for its
 * key; or the receipt is known and no result came.
 */
export function deadlineEndReason(
  run: Pick<RunRecord, "deliveryId">,
  heldResultNamesRun: boolean,
  harnessAsked: boolean,
): DeadlineEndReason {
  if (heldResultNamesRun) return OS_END_REASONS.resultHeld;
  if (!harnessAsked) return OS_END_REASONS.harnessUnreachable;
  if (run.deliveryId === undefined) return OS_END_REASONS.receiptNotFound;
  return OS_END_REASONS.resultNotReceived;
}
