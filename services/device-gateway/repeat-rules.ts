import type { RedisClient } from "../../libs/redis/redis-client.js";
import type { LampErrorCode } from "../../libs/contract/lamp-wire.js";
import { outboxEntrySchema } from "../../libs/contract/os-playback.js";
import type { OsDeviceKeys } from "../../libs/os-store/os-keys.js";
import { parseResultRecord } from "../../libs/os-store/result-record.js";

/** Suppression reasons that say the result has no place to be spoken, so a repeat cannot speak it either. */
const UNSPEAKABLE = new Set(["mixed_destinations", "not_voice_route"]);

export interface RepeatRefusal {
  code: LampErrorCode;
  message: string;
}

/**
 * Whether "say that again" may speak a stored result of this device: only one that exists for it, did not fail or
 * get cancelled (a failed result is never spoken as an answer), and was not withheld for having no single voice
 * destination. Other suppressions (expired, cancelled run) do not bind an explicit repeat.
 */
export async function repeatRefusal(
  redis: RedisClient,
  device: OsDeviceKeys,
  resultId: string,
): Promise<RepeatRefusal | undefined> {
  const resultKey = await redis.get(device.resultId(resultId));
  const result =
    resultKey === null ? undefined : parseResultRecord(await redis.hgetall(device.result(resultKey)));
  if (resultKey === null || !result) return { code: "NOT_FOUND", message: "no such result for this device" };
  if (result.outcome !== "completed")
    return {
      code: "NOT_REPEATABLE",
      message: `the result's outcome is ${result.outcome}; it is never spoken`,
    };
  const outbox = await redis.hgetall(device.outbox(resultKey));
  if (Object.keys(outbox).length === 0) return undefined;
  const entry = outboxEntrySchema.parse(outbox);
  if (entry.state === "suppressed" && entry.reason && UNSPEAKABLE.has(entry.reason))
    return {
      code: "NOT_REPEATABLE",
      message: `the answer was withheld (${entry.reason}); it is never spoken`,
    };
  return undefined;
}
