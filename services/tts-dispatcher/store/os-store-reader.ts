import type { RedisClient } from "../../../libs/redis/redis-client.js";
import { OsDeviceKeys } from "../../../libs/os-store/os-keys.js";
import { resultRecordSchema, type ResultRecord } from "../../../libs/os-store/result-record.js";
import { runRecordSchema, type RunRecord } from "../../../libs/os-store/run-record.js";
import type { Keyspace } from "../../../libs/redis/keyspace.js";

/**
 * Reads what the run-resolver and the run registry stored, with the OS store's own record parsers
 * (libs/os-store); a record that does not parse is a coded error, never a guess.
 */

export type StoredResult = ResultRecord & { resultKey: string };

/** What the delivery decision reads of a member run. */
export type MemberRun = Pick<
  RunRecord,
  "runId" | "createdAt" | "voiceTargetId" | "voiceTargetExpiresAt" | "replyRoute" | "cancelledAt"
>;

export class StoreRecordError extends Error {
  constructor(
    readonly code: "RESULT_NOT_FOUND" | "RESULT_INVALID" | "RUN_NOT_FOUND" | "RUN_INVALID",
    detail: string,
  ) {
    super(`${code}: ${detail}`);
    this.name = "StoreRecordError";
  }
}

export class OsStoreReader {
  constructor(
    private readonly redis: RedisClient,
    private readonly keys: Keyspace,
  ) {}

  async result(deviceId: string, resultKey: string): Promise<StoredResult> {
    const fields = await this.redis.hgetall(new OsDeviceKeys(this.keys, deviceId).result(resultKey));
    if (Object.keys(fields).length === 0)
      throw new StoreRecordError("RESULT_NOT_FOUND", `${deviceId} ${resultKey}`);
    const parsed = resultRecordSchema.safeParse(fields);
    if (!parsed.success)
      throw new StoreRecordError(
        "RESULT_INVALID",
        `${resultKey}: ${parsed.error.issues[0]?.message ?? "invalid"}`,
      );
    return { ...parsed.data, resultKey };
  }

  /** The stored result a device owns under this resultId, if any (results are looked up only under the device). */
  async resultKeyById(deviceId: string, resultId: string): Promise<string | undefined> {
    const resultKey = await this.redis.get(new OsDeviceKeys(this.keys, deviceId).resultId(resultId));
    return resultKey ?? undefined;
  }

  /** The voice target of the device's most recent run (`B:runs`, scored by createdAt), if it has one. */
  async latestRunVoiceTarget(deviceId: string): Promise<string | undefined> {
    const device = new OsDeviceKeys(this.keys, deviceId);
    const [runId] = await this.redis.zrevrange(device.runs, 0, 0);
    if (runId === undefined) return undefined;
    const voiceTargetId = await this.redis.hget(device.run(runId), "voiceTargetId");
    return runRecordSchema.shape.voiceTargetId.optional().parse(voiceTargetId ?? undefined);
  }

  async memberRuns(deviceId: string, result: StoredResult): Promise<MemberRun[]> {
    const device = new OsDeviceKeys(this.keys, deviceId);
    const pipeline = this.redis.pipeline();
    for (const member of result.members) pipeline.hgetall(device.run(member.runId));
    const replies = (await pipeline.exec()) ?? [];
    return result.members.map((member, index) => {
      const [error, fields] = replies[index] ?? [new Error("no reply"), null];
      if (error) throw error;
      if (!fields || Object.keys(fields).length === 0)
        throw new StoreRecordError("RUN_NOT_FOUND", `${deviceId} ${member.runId}`);
      const parsed = runRecordSchema.safeParse(fields);
      if (!parsed.success)
        throw new StoreRecordError(
          "RUN_INVALID",
          `${member.runId}: ${parsed.error.issues[0]?.path.join(".")}`,
        );
      return parsed.data;
    });
  }
}
