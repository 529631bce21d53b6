import { z } from "zod";
import { routedMemberSchema } from "../contract/pipeline-payloads.js";
import { outcomeSchema } from "../contract/turn-result.js";

/** The `B:result:<resultKey>` hash: one stored result with its membership, referenced by every member run. */
export const resultRecordSchema = z.object({
  resultId: z.string().min(1),
  serverInstanceId: z.string().min(1),
  deviceId: z.string().min(1),
  agentId: z.string().min(1),
  outcome: outcomeSchema,
  fullText: z.string(),
  engineTurnId: z.string().optional(),
  members: z.string().transform((text, context) => {
    const parsed = z.array(routedMemberSchema).min(1).safeParse(JSON.parse(text));
    if (parsed.success) return parsed.data;
    context.addIssue({ code: "custom", message: "members is not a member list" });
    return z.NEVER;
  }),
  contentHash: z.string().min(1),
  storedAt: z.coerce.number().int().nonnegative(),
  emittedAt: z.coerce.number().int().nonnegative().optional(),
});
export type ResultRecord = z.infer<typeof resultRecordSchema>;

export function parseResultRecord(hash: Record<string, string>): ResultRecord | undefined {
  if (Object.keys(hash).length === 0) return undefined;
  return resultRecordSchema.parse(hash);
}

/** Why the router refused a whole Harness event (recorded in `B:rejections`, counted, shown by the API). */
export const rejectionReasonSchema = z.enum([
  "INVALID_EVENT",
  "DUPLICATE_MEMBER",
  "PAYLOAD_TOO_LARGE",
  "UNKNOWN_MEMBER",
  "KEY_MISMATCH",
  "DELIVERY_MISMATCH",
  "AGENT_MISMATCH",
  "INSTANCE_MISMATCH",
  "MEMBER_NOT_PENDING",
  "SINGULAR_KEY_ON_GROUP",
  "LEGACY_SUMMARY_NO_KEY",
  "LEGACY_SUMMARY_KEY_CONFLICT",
  "LEGACY_SUMMARY_OVERLAP",
  /** Held for receipts that never bound: every run it names ended (at the latest at its deadline) first. */
  "RECEIPTS_NEVER_BOUND",
]);
export type RejectionReason = z.infer<typeof rejectionReasonSchema>;

export const rejectionRecordSchema = z.strictObject({
  reason: rejectionReasonSchema,
  detail: z.string(),
  kind: z.string(),
  agentId: z.string().optional(),
  transportInstanceId: z.string().optional(),
  eventId: z.number().int().optional(),
  serverInstanceId: z.string().optional(),
  resultId: z.string().optional(),
  rejectedBy: z.enum(["router", "run-resolver"]),
  at: z.number().int().nonnegative(),
});
export type RejectionRecord = z.infer<typeof rejectionRecordSchema>;

export const protocolErrorRecordSchema = z.strictObject({
  code: z.literal("RESULT_CONTENT_CHANGED"),
  serverInstanceId: z.string(),
  resultId: z.string(),
  storedHash: z.string(),
  receivedHash: z.string(),
  transportInstanceId: z.string(),
  eventId: z.number().int(),
  at: z.number().int().nonnegative(),
});
export type ProtocolErrorRecord = z.infer<typeof protocolErrorRecordSchema>;
