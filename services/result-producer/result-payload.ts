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
import type { HarnessEvidence } from "../../libs/contract/pipeline-payloads.js";

type TurnCompleted = Extract<HarnessEvidence, { kind: "turn.completed" }>;

/** Why a real boundary still publishes nothing; its members' receipts end `unknown` with this code. */
export interface Withholding {
  code: string;
  message: string;
}

export type BuiltPayload =
  { ok: true; bytes: string; members: ResultMember[] } | { ok: false; withheld: Withholding };

/**
 * Evidence that may make a group member. `fingerprint` members come only from transcript engines, where the
 * engine's own structure (parent chain, turn metadata) proves consumption and the fingerprint, with exactly one
 * candidate, only says which input it was (docs/decisions.md). `ordinal` and `synthetic` never make a group.
 */
const GROUP_PROOF = new Set(["native_exact", "native_scoped", "fingerprint"]);

/** A failed or cancelled turn that printed nothing still ends its members' runs with the engine's outcome. */
const TEXTLESS_OUTCOME: Record<string, string> = {
  failed: "The engine reported a failure before giving an answer.",
  cancelled: "The turn was cancelled before an answer was given.",
};

/**
 * Builds the immutable turn.result payload of a single-device boundary and serializes it once (canonical JSON):
 * these bytes are stored and every later send reuses them. Bounds are enforced here, never by truncation.
 */
export function buildResultPayload(
  evidence: TurnCompleted,
  serverInstanceId: string,
  resultId: string,
): BuiltPayload {
  const withhold = (code: string, message: string): BuiltPayload => ({
    ok: false,
    withheld: { code, message },
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
    members.length > 1 ? !GROUP_PROOF.has(member.correlation) : member.correlation === "synthetic",
  );
  if (weak)
    return withhold("RESULT_EVIDENCE_MISSING", `${weak.correlation} evidence cannot prove membership`);
  const fullText = evidence.fullText || TEXTLESS_OUTCOME[evidence.outcome];
  if (!fullText) return withhold("RESULT_EMPTY", "completed boundary without result text");
  const payload = turnResultPayloadSchema.parse({
    serverInstanceId,
    resultId,
    correlation: correlationFor(members, evidence.engineTurnId),
    outcome: evidence.outcome,
    fullText,
  });
  const bytes = canonicalJson(payload);
  if (utf8Bytes(bytes) > MAX_RESULT_PAYLOAD_BYTES)
    return withhold(
      "RESULT_TOO_LARGE",
      `payload of ${utf8Bytes(bytes)} bytes exceeds ${MAX_RESULT_PAYLOAD_BYTES}`,
    );
  return { ok: true, bytes, members };
}
