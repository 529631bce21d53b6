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
