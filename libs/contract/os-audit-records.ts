import { z } from "zod";

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
