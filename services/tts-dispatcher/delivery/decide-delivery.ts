import type { OutboxEntry, PlaybackReason } from "../../../libs/contract/os-playback.js";
import type { Outcome } from "../../../libs/contract/turn-result.js";
import type { MemberRun } from "../store/os-store-reader.js";

export type SuppressionReason = Extract<
  PlaybackReason,
  "expired" | "not_voice_route" | "cancelled" | "mixed_destinations" | "failed_result" | "cancelled_result"
>;

export type DeliveryDecision =
  | { action: "speak"; newest: MemberRun }
  | { action: "suppress"; reason: SuppressionReason; newest: MemberRun; notice: boolean };

/**
 * Whether one result is spoken, and where. The newest member (greatest createdAt) owns the spoken reply: its route,
 * its voice target, its cancel. Checked in this order, first match wins:
 *   failed_result, cancelled_result (the outcome) → cancelled (newest run cancelled) → mixed_destinations (members
 *   span distinct voice targets: never pick one) → not_voice_route → expired.
 * A failed result may still get a short notice (`notice: true`) when its newest member could have been spoken to.
 */
export function decideDelivery(outcome: Outcome, runs: readonly MemberRun[], now: number): DeliveryDecision {
  const newest = newestMember(runs);
  const blocker = routeBlocker(runs, newest, now);
  if (outcome === "failed") return { action: "suppress", reason: "failed_result", newest, notice: !blocker };
  if (outcome === "cancelled")
    return { action: "suppress", reason: "cancelled_result", newest, notice: false };
  if (blocker) return { action: "suppress", reason: blocker, newest, notice: false };
  return { action: "speak", newest };
}

function routeBlocker(
  runs: readonly MemberRun[],
  newest: MemberRun,
  now: number,
): SuppressionReason | undefined {
  if (newest.cancelledAt !== undefined) return "cancelled";
  if (new Set(runs.map((run) => run.voiceTargetId)).size > 1) return "mixed_destinations";
  if (newest.replyRoute !== "voice") return "not_voice_route";
  if (newest.voiceTargetExpiresAt <= now) return "expired";
  return undefined;
}

/**
 * Why a "say that again" of a stored result is not spoken, if it is not: a failed or cancelled outcome, or an answer
 * that was never for a voice (its outbox entry suppressed as mixed_destinations or not_voice_route). Expiry and
 * cancels do not count: repeating is what the Lamp asked for, now, to the target it names.
 */
export function repeatBlocker(
  outcome: Outcome,
  outbox: Pick<OutboxEntry, "state" | "reason"> | undefined,
): SuppressionReason | undefined {
  if (outcome === "failed") return "failed_result";
  if (outcome === "cancelled") return "cancelled_result";
  if (outbox?.state !== "suppressed") return undefined;
  if (outbox.reason === "mixed_destinations" || outbox.reason === "not_voice_route") return outbox.reason;
  return undefined;
}

/** Greatest createdAt; on a tie the later member in the result's own order. */
export function newestMember(runs: readonly MemberRun[]): MemberRun {
  const [first, ...rest] = runs;
  if (!first) throw new RangeError("a result has at least one member");
  return rest.reduce((newest, run) => (run.createdAt >= newest.createdAt ? run : newest), first);
}
