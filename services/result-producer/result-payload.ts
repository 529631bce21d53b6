import { canonicalJson } from "../../libs/contract/canonical-json.js";
import { utf8Bytes } from "../../libs/contract/identifiers.js";
import {
  correlationFor,
  duplicateMemberProblem,
  MAX_GROUP_MEMBERS,
  MAX_RESULT_PAYLOAD_BYTES,
  turnResultPayloadSchema,
  type ResultMember,
} from "../../libs/contract/turn-result.js";
import type { HarnessEvidence } from "../../libs/contract/streams.js";

type TurnCompleted = Extract<HarnessEvidence, { kind: "turn.completed" }>;

/** Why a real boundary still publishes nothing; `receiptsUnknown` says whether its members end `unknown`. */
export interface Withholding {
  code: string;
  message: string;
  receiptsUnknown: boolean;
}

export type BuiltPayload =
  { ok: true; bytes: string; members: ResultMember[] } | { ok: false; withheld: Withholding };

const NATIVE = new Set(["native_exact", "native_scoped"]);

/**
 * Builds the immutable turn.result payload of a single-device boundary and serializes it once (canonical JSON):
 * these bytes are stored and every later send reuses them. Bounds are enforced here, never by truncation.
 */
export function buildResultPayload(
  evidence: TurnCompleted,
  serverInstanceId: string,
  resultId: string,
): BuiltPayload {
  const withhold = (code: string, message: string, receiptsUnknown = true): BuiltPayload => ({
    ok: false,
    withheld: { code, message, receiptsUnknown },
  });
  const members = evidence.members.map((member) => ({
    deliveryId: member.deliveryId,
    idempotencyKey: member.idempotencyKey,
  }));
  if (members.length > MAX_GROUP_MEMBERS)
    return withhold("RESULT_TOO_LARGE", `${members.length} members exceed ${MAX_GROUP_MEMBERS}`);
  const duplicate = duplicateMemberProblem(members);
  if (duplicate) return withhold("RESULT_EVIDENCE_MISSING", duplicate);
  const weak = evidence.members.find((member) =>
    members.length > 1 ? !NATIVE.has(member.correlation) : member.correlation === "synthetic",
  );
  if (weak)
    return withhold("RESULT_EVIDENCE_MISSING", `${weak.correlation} evidence cannot prove membership`);
  if (evidence.fullText.length === 0) {
    // A failed or cancelled turn with no text has nothing to publish, and its receipts stay as they are.
    const completed = evidence.outcome === "completed";
    return withhold("RESULT_EMPTY", "boundary without result text", completed);
  }
  const payload = turnResultPayloadSchema.parse({
    serverInstanceId,
    resultId,
    correlation: correlationFor(members, evidence.engineTurnId),
    outcome: evidence.outcome,
    fullText: evidence.fullText,
  });
  const bytes = canonicalJson(payload);
  if (utf8Bytes(bytes) > MAX_RESULT_PAYLOAD_BYTES)
    return withhold(
      "RESULT_TOO_LARGE",
      `payload of ${utf8Bytes(bytes)} bytes exceeds ${MAX_RESULT_PAYLOAD_BYTES}`,
    );
  return { ok: true, bytes, members };
}
