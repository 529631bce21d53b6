import type { Redis } from "ioredis";
import { z } from "zod";
import type { Keyspace } from "../redis/keyspace.js";
import { fieldValue, type RawEntry } from "./stream-entry.js";
import { PAYLOAD_FIELD } from "./stream-writer.js";

/** One `<stream>:dlq` entry as StreamConsumer writes it: the original payload, where it came from and why it failed. */
export const deadLetterSchema = z.object({
  id: z.string(),
  stream: z.string(),
  group: z.string(),
  originalId: z.string(),
  error: z.string(),
  deliveries: z.coerce.number().int().nonnegative(),
  failedAt: z.string(),
  payload: z.string(),
});
export type DeadLetter = z.infer<typeof deadLetterSchema>;

const DEAD_LETTER_FIELDS = ["stream", "group", "originalId", "error", "deliveries", "failedAt"] as const;

export function parseDeadLetter([id, fields]: RawEntry): DeadLetter {
  const named = Object.fromEntries(DEAD_LETTER_FIELDS.map((name) => [name, fieldValue(fields, name)]));
  return deadLetterSchema.parse({ id, ...named, payload: fieldValue(fields, PAYLOAD_FIELD) ?? "" });
}

/** The newest dead letters of a stream and how many it holds. */
export async function newestDeadLetters(
  redis: Redis,
  keys: Keyspace,
  streamName: string,
  count: number,
): Promise<{ total: number; entries: DeadLetter[] }> {
  const key = keys.deadLetter(streamName);
  const [total, entries] = await Promise.all([
    redis.xlen(key),
    redis.xrevrange(key, "+", "-", "COUNT", count),
  ]);
  return { total, entries: entries.map(parseDeadLetter) };
}

/**
 * Moves a dead letter back onto its stream as a new entry (its consumer group reads it like any other), then removes
 * it from the dead letters. Append first: a crash in between leaves it in both places, never in neither, and two
 * operators redriving at once append it twice. Both are harmless, since every consumer is idempotent on business
 * identity. The two keys are in different hash slots, so one script could not hold both on Redis Cluster.
 */
export async function redriveDeadLetter(
  redis: Redis,
  keys: Keyspace,
  streamName: string,
  entryId: string,
): Promise<{ redrivenAs: string } | undefined> {
  const key = keys.deadLetter(streamName);
  const [entry] = await redis.xrange(key, entryId, entryId);
  if (!entry) return undefined;
  const letter = parseDeadLetter(entry);
  const redrivenAs = await redis.xadd(keys.stream(streamName), "*", PAYLOAD_FIELD, letter.payload);
  await redis.xdel(key, entryId);
  return { redrivenAs: redrivenAs ?? "" };
}
