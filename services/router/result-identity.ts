import { canonicalHash } from "../../libs/contract/canonical-json.js";
import type { Outcome, ResultMember } from "../../libs/contract/turn-result.js";

export interface ResultContent {
  serverInstanceId: string;
  resultId: string;
  outcome: Outcome;
  fullText: string;
  members: readonly ResultMember[];
  engineTurnId?: string | undefined;
}

/**
 * The canonical content hash the run-resolver dedupes on: same identity and same hash = a replay; same identity
 * and another hash = changed content or membership (a protocol error). Member order does not matter.
 */
export function resultContentHash(content: ResultContent): string {
  const members = content.members
    .map(({ deliveryId, idempotencyKey }) => ({ deliveryId, idempotencyKey }))
    .sort((a, b) => (a.deliveryId < b.deliveryId ? -1 : a.deliveryId > b.deliveryId ? 1 : 0));
  return canonicalHash({
    serverInstanceId: content.serverInstanceId,
    resultId: content.resultId,
    outcome: content.outcome,
    fullText: content.fullText,
    members,
    engineTurnId: content.engineTurnId,
  });
}
