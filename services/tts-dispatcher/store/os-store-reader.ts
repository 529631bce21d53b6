import type { RedisClient } from "../../../libs/redis/redis-client.js";
import { OsDeviceKeys } from "../../../libs/os-store/os-keys.js";
import { resultRecordSchema, type ResultRecord } from "../../../libs/os-store/result-record.js";
import { runRecordSchema, type RunRecord } from "../../../libs/os-store/run-record.js";
import type { Keyspace } from "../../../libs/redis/keyspace.js";
import { NamedLuaScript } from "../../../libs/redis/lua-script.js";
import { outboxEntrySchema, type OutboxEntry } from "../../../libs/contract/os-playback.js";
import { z } from "zod";

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

/** An HGETALL reply as a pipeline hands it over. */
const hashReply = z.record(z.string(), z.string());
/** dispatch-inputs-1.lua: the outbox entry when there is one, else the result (absent when missing) and its runs. */
const dispatchInputsSchema = z.union([
  z.strictObject({ outbox: hashReply }),
  z.strictObject({ result: hashReply.default({}), runs: z.array(hashReply).default([]) }),
]);
const dispatchInputsScript = NamedLuaScript.fromFile<{ resultKey: string }, typeof dispatchInputsSchema>(
  new URL("../lua/dispatch-inputs-1.lua", import.meta.url),
  dispatchInputsSchema,
);

export class OsStoreReader {
  constructor(
    private readonly redis: RedisClient,
    private readonly keys: Keyspace,
  ) {}

  async result(deviceId: string, resultKey: string): Promise<StoredResult> {
    const fields = await this.redis.hgetall(new OsDeviceKeys(this.keys, deviceId).result(resultKey));
    return storedResultOf(fields, deviceId, resultKey);
  }

  /**
   * What dispatching a resolved result needs, in one round trip: its outbox entry when it has one (a redelivery),
   * else the stored result and its member runs.
   */
  async dispatchInputs(
    deviceId: string,
    resultKey: string,
  ): Promise<{ known: OutboxEntry } | { result: StoredResult; runs: MemberRun[] }> {
    const device = new OsDeviceKeys(this.keys, deviceId);
    const inputs = await dispatchInputsScript.run(this.redis, [device.base], { resultKey });
    if ("outbox" in inputs) return { known: outboxEntrySchema.parse(inputs.outbox) };
    const { runs } = inputs;
    const result = storedResultOf(inputs.result, deviceId, resultKey);
    return {
      result,
      runs: result.members.map((member, index) => memberRunOf(runs[index] ?? {}, deviceId, member.runId)),
    };
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
    return runRecordSchema.in.shape.voiceTargetId.optional().parse(voiceTargetId ?? undefined);
  }

  async memberRuns(deviceId: string, result: StoredResult): Promise<MemberRun[]> {
    const device = new OsDeviceKeys(this.keys, deviceId);
    const pipeline = this.redis.pipeline();
    for (const member of result.members) pipeline.hgetall(device.run(member.runId));
    const replies = (await pipeline.exec()) ?? [];
    return result.members.map((member, index) => {
      const [error, fields] = replies[index] ?? [new Error("no reply"), null];
      if (error) throw error;
      return memberRunOf(hashReply.parse(fields ?? {}), deviceId, member.runId);
    });
  }
}

function storedResultOf(fields: Record<string, string>, deviceId: string, resultKey: string): StoredResult {
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

function memberRunOf(fields: Record<string, string>, deviceId: string, runId: string): MemberRun {
  if (Object.keys(fields).length === 0) throw new StoreRecordError("RUN_NOT_FOUND", `${deviceId} ${runId}`);
  const parsed = runRecordSchema.safeParse(fields);
  if (!parsed.success)
    throw new StoreRecordError("RUN_INVALID", `${runId}: ${parsed.error.issues[0]?.path.join(".")}`);
  return parsed.data;
}
