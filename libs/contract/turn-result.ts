import { z } from "zod";
import { idempotencyKeySchema, nonEmpty } from "./identifiers.js";

export const MAX_GROUP_MEMBERS = 64;
/** Upper bound of one serialized turn.result payload; larger results are withheld, never truncated. */
export const MAX_RESULT_PAYLOAD_BYTES = 32 * 1024;

export const outcomeSchema = z.enum(["completed", "failed", "cancelled"]);
export type Outcome = z.infer<typeof outcomeSchema>;

export const resultMemberSchema = z.strictObject({
  deliveryId: nonEmpty,
  idempotencyKey: idempotencyKeySchema,
});
export type ResultMember = z.infer<typeof resultMemberSchema>;

const inputCorrelationSchema = z.strictObject({
  scope: z.literal("input"),
  inputs: z.array(resultMemberSchema).min(1).max(1),
  engineTurnId: nonEmpty.optional(),
});

const groupCorrelationSchema = z.strictObject({
  scope: z.literal("group"),
  inputs: z.array(resultMemberSchema).min(2).max(MAX_GROUP_MEMBERS),
  engineTurnId: nonEmpty.optional(),
});

/** `input` scope has exactly one member, `group` two to 64 (the peer's schema uses oneOf for the same rule). */
export const correlationSchema = z.union([inputCorrelationSchema, groupCorrelationSchema]);
export type Correlation = z.infer<typeof correlationSchema>;

const resultFields = {
  serverInstanceId: nonEmpty,
  resultId: nonEmpty,
  correlation: correlationSchema,
  outcome: outcomeSchema,
  fullText: nonEmpty,
};

/** The immutable result: the payload of `turn.result` (seed 000), exactly the peer's published schema. */
export const turnResultPayloadSchema = z.strictObject(resultFields);
export type TurnResultPayload = z.infer<typeof turnResultPayloadSchema>;

const eventEnvelopeFields = {
  type: z.literal("event"),
  agentId: nonEmpty,
  serverInstanceId: nonEmpty.optional(),
  machineId: nonEmpty.optional(),
  eventId: z.number().int().positive().max(Number.MAX_SAFE_INTEGER).optional(),
};

export const turnResultEventSchema = z.strictObject({
  ...eventEnvelopeFields,
  kind: z.literal("turn.result"),
  payload: turnResultPayloadSchema,
});

/** The later contract revision: the same result carried inside `turn.summary`, with the legacy summary fields. */
export const correlatedSummaryPayloadSchema = z.strictObject({
  ...resultFields,
  kind: z.literal("summary").optional(),
  text: z.string().optional(),
  recap: z.string().optional(),
  idempotencyKey: idempotencyKeySchema.optional(),
  turnId: nonEmpty.nullable().optional(),
});

export const correlatedSummaryEventSchema = z.strictObject({
  ...eventEnvelopeFields,
  kind: z.literal("turn.summary"),
  payload: correlatedSummaryPayloadSchema,
});

/** Members must be distinct by deliveryId and by idempotencyKey: a semantic rule the JSON schema cannot state. */
export function duplicateMemberProblem(members: readonly ResultMember[]): string | undefined {
  const deliveries = new Set(members.map((member) => member.deliveryId));
  if (deliveries.size !== members.length) return "duplicate deliveryId in membership";
  const keys = new Set(members.map((member) => member.idempotencyKey));
  if (keys.size !== members.length) return "duplicate idempotencyKey in membership";
  return undefined;
}

export function correlationFor(members: ResultMember[], engineTurnId?: string): Correlation {
  const base = engineTurnId ? { engineTurnId } : {};
  return members.length === 1
    ? { scope: "input", inputs: members, ...base }
    : { scope: "group", inputs: members, ...base };
}
