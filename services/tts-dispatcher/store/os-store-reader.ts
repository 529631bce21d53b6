import type { Redis } from "ioredis";
import { z } from "zod";
import { replyRouteSchema } from "../../../libs/contract/lamp-wire.js";
import { routedMemberSchema } from "../../../libs/contract/streams.js";
import { outcomeSchema } from "../../../libs/contract/turn-result.js";
import type { Keyspace } from "../../../libs/redis/keyspace.js";

/**
 * Reads what the run-resolver and the run registry stored (docs/architecture.md "OS store"). Only the fields this
 * service decides on are parsed; a record that does not parse is a coded error, never a guess.
 */

const epochMs = z.coerce.number().int().nonnegative();

const storedResultSchema = z.object({
  resultId: z.string().min(1),
  serverInstanceId: z.string().min(1),
  deviceId: z.string().min(1),
  outcome: outcomeSchema,
  fullText: z.string(),
  members: z
    .string()
    .transform((text, context) => {
      try {
        return JSON.parse(text) as unknown;
      } catch {
        context.addIssue({ code: "custom", message: "members is not JSON" });
        return z.NEVER;
      }
    })
    .pipe(z.array(routedMemberSchema).min(1)),
});
export type StoredResult = z.infer<typeof storedResultSchema> & { resultKey: string };

const memberRunSchema = z.object({
  runId: z.string().min(1),
  createdAt: epochMs,
  voiceTargetId: z.string().min(1),
  /** Absent or empty reads as "already expired": a reply we cannot place in time is not spoken. */
  voiceTargetExpiresAt: z
    .string()
    .optional()
    .transform((value) => (value === undefined || value === "" ? 0 : Number(value)))
    .pipe(z.number().int().nonnegative()),
  replyRoute: replyRouteSchema,
  cancelledAt: z
    .string()
    .optional()
    .transform((value) => (value === undefined || value === "" ? undefined : value)),
});
export type MemberRun = z.infer<typeof memberRunSchema>;

export class StoreRecordError extends Error {
  constructor(
    readonly code: "RESULT_NOT_FOUND" | "RESULT_INVALID" | "RUN_NOT_FOUND" | "RUN_INVALID",
    detail: string,
  ) {
    super(`${code}: ${detail}`);
    this.name = "StoreRecordError";
  }
}

export const resultKeyOf = (serverInstanceId: string, resultId: string) => `${serverInstanceId}|${resultId}`;

export class OsStoreReader {
  constructor(
    private readonly redis: Redis,
    private readonly keys: Keyspace,
  ) {}

  async result(deviceId: string, resultKey: string): Promise<StoredResult> {
    const fields = await this.redis.hgetall(`${this.keys.osDevice(deviceId)}:result:${resultKey}`);
    if (Object.keys(fields).length === 0)
      throw new StoreRecordError("RESULT_NOT_FOUND", `${deviceId} ${resultKey}`);
    const parsed = storedResultSchema.safeParse(fields);
    if (!parsed.success)
      throw new StoreRecordError(
        "RESULT_INVALID",
        `${resultKey}: ${parsed.error.issues[0]?.message ?? "invalid"}`,
      );
    return { ...parsed.data, resultKey };
  }

  /** The stored result a device owns under this resultId, if any (results are looked up only under the device). */
  async resultKeyById(deviceId: string, resultId: string): Promise<string | undefined> {
    const resultKey = await this.redis.get(`${this.keys.osDevice(deviceId)}:result-id:${resultId}`);
    return resultKey ?? undefined;
  }

  async memberRuns(deviceId: string, result: StoredResult): Promise<MemberRun[]> {
    const base = this.keys.osDevice(deviceId);
    const pipeline = this.redis.pipeline();
    for (const member of result.members) pipeline.hgetall(`${base}:run:${member.runId}`);
    const replies = (await pipeline.exec()) ?? [];
    return result.members.map((member, index) => {
      const [error, fields] = replies[index] ?? [new Error("no reply"), null];
      if (error) throw error;
      if (!fields || Object.keys(fields).length === 0)
        throw new StoreRecordError("RUN_NOT_FOUND", `${deviceId} ${member.runId}`);
      const parsed = memberRunSchema.safeParse(fields);
      if (!parsed.success)
        throw new StoreRecordError(
          "RUN_INVALID",
          `${member.runId}: ${parsed.error.issues[0]?.path.join(".")}`,
        );
      return parsed.data;
    });
  }
}
