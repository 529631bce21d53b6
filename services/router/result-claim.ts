import { utf8Bytes } from "../../libs/contract/identifiers.js";
import {
  correlatedSummaryEventSchema,
  duplicateMemberProblem,
  MAX_RESULT_PAYLOAD_BYTES,
  turnResultEventSchema,
} from "../../libs/contract/turn-result.js";
import { reject, type ResultClaim, type Verdict } from "./verdict.js";

/**
 * Reads a correlated result (`turn.result`, or the later `turn.summary` carrying the same correlation) strictly:
 * the peer's schema, distinct members, scope agreeing with the member count, the payload size bound, and no
 * singular key on a group. Anything else rejects the whole event.
 */
export function readCorrelatedClaim(frame: Record<string, unknown>): ResultClaim | Verdict {
  const isSummary = frame.kind === "turn.summary";
  const parsed = isSummary
    ? correlatedSummaryEventSchema.safeParse(frame)
    : turnResultEventSchema.safeParse(frame);
  if (!parsed.success) {
    const issue = parsed.error.issues[0];
    return reject("INVALID_EVENT", `${issue?.path.join(".") || "(root)"}: ${issue?.message ?? "invalid"}`);
  }
  const payload = parsed.data.payload;
  const identity = { serverInstanceId: payload.serverInstanceId, resultId: payload.resultId };
  if (utf8Bytes(JSON.stringify(payload)) > MAX_RESULT_PAYLOAD_BYTES)
    return reject("PAYLOAD_TOO_LARGE", `payload exceeds ${MAX_RESULT_PAYLOAD_BYTES} bytes`, identity);
  const members = payload.correlation.inputs;
  const duplicate = duplicateMemberProblem(members);
  if (duplicate) return reject("DUPLICATE_MEMBER", duplicate, identity);
  const singularKey = "idempotencyKey" in payload ? payload.idempotencyKey : undefined;
  if (singularKey !== undefined) {
    if (payload.correlation.scope === "group")
      return reject("SINGULAR_KEY_ON_GROUP", "a group result names a singular idempotencyKey", identity);
    if (members[0]?.idempotencyKey !== singularKey)
      return reject("KEY_MISMATCH", "payload.idempotencyKey differs from the member's key", identity);
  }
  return {
    wireKind: isSummary ? "turn.summary.correlated" : "turn.result",
    ...identity,
    outcome: payload.outcome,
    fullText: payload.fullText,
    engineTurnId: payload.correlation.engineTurnId,
    members: members.map(({ deliveryId, idempotencyKey }) => ({ deliveryId, idempotencyKey })),
  };
}

export const isVerdict = (value: ResultClaim | Verdict): value is Verdict => "verdict" in value;
