import type { RedisClient } from "../redis/redis-client.js";
import { z } from "zod";
import type { Keyspace } from "../redis/keyspace.js";
import { fieldValue, type RawEntry } from "./stream-entry.js";
import { PAYLOAD_FIELD } from "./stream-writer.js";

/**
 * One `<stream>:dlq` entry as StreamConsumer writes it: the original payload, where it came from, why it failed
 * (`code`, and `error` the message) and which device or agent it affected (`affects`, when the payload said).
 * Letters written before `code` and `affects` were kept have neither.
 */
export const deadLetterSchema = z.object({
  id: z.string(),
  stream: z.string(),
  group: z.string(),
  originalId: z.string(),
  code: z.string().optional(),
  error: z.string(),
  affects: z.string().optional(),
  deliveries: z.coerce.number().int().nonnegative(),
  failedAt: z.string(),
  payload: z.string(),
});
export type DeadLetter = z.infer<typeof deadLetterSchema>;

/** What a consumer says about an entry it gives up on. */
export type DeadLetterDraft = Omit<DeadLetter, "id" | "failedAt">;

const DEAD_LETTER_FIELDS = [
  "stream",
  "group",
  "originalId",
  "code",
  "error",
  "affects",
  "deliveries",
  "failedAt",
] as const;

export function parseDeadLetter([id, fields]: RawEntry): DeadLetter {
  const named = Object.fromEntries(DEAD_LETTER_FIELDS.map((name) => [name, fieldValue(fields, name)]));
  return deadLetterSchema.parse({ id, ...named, payload: fieldValue(fields, PAYLOAD_FIELD) ?? "" });
}

/** The flat field list of a dead letter; absent fields are left out. */
export function deadLetterFields(draft: DeadLetterDraft, failedAt: Date): string[] {
  const letter: Omit<DeadLetter, "id" | "payload"> = { ...draft, failedAt: failedAt.toISOString() };
  const named = DEAD_LETTER_FIELDS.flatMap((name) =>
    letter[name] === undefined ? [] : [name, String(letter[name])],
  );
  return [PAYLOAD_FIELD, draft.payload, ...named];
}

/**
 * Where redriven letters of a stream partition wait: its consumer takes them before anything else it reads, so an
 * in-order reader handles a redriven entry next instead of behind its backlog. Same slot as the partition.
 */
export function redriveKey(keys: Keyspace, streamName: string, partition = 0): string {
  return `${keys.stream(streamName, partition)}:redrive`;
}

/** Every partition's dead-letter key of a stream (a stream that is not partitioned only ever fills partition 0). */
function deadLetterKeys(keys: Keyspace, streamName: string): string[] {
  return Array.from({ length: keys.partitions }, (_, partition) => keys.deadLetter(streamName, partition));
}

/** The newest dead letters of a stream, over all its partitions, and how many it holds. */
export async function newestDeadLetters(
  redis: RedisClient,
  keys: Keyspace,
  streamName: string,
  count: number,
): Promise<{ total: number; entries: DeadLetter[] }> {
  const perPartition = await Promise.all(
    deadLetterKeys(keys, streamName).map(async (key) => {
      const [total, entries] = await Promise.all([
        redis.xlen(key),
        redis.xrevrange(key, "+", "-", "COUNT", count),
      ]);
      return { total, entries: entries.map(parseDeadLetter) };
    }),
  );
  const entries = perPartition
    .flatMap((partition) => partition.entries)
    .sort((a, b) => b.failedAt.localeCompare(a.failedAt))
    .slice(0, count);
  return { total: perPartition.reduce((sum, partition) => sum + partition.total, 0), entries };
}

/**
 * Moves a dead letter back to its stream partition's redrive queue (its consumer takes it next, ahead of what it
 * reads from the stream), then removes it from the dead letters. Append first: a crash in between leaves it in both
 * places, never in neither, and two operators redriving at once append it twice. Both are harmless, since every
 * consumer is idempotent on business identity. The letter goes back to the partition it came from.
 */
export async function redriveDeadLetter(
  redis: RedisClient,
  keys: Keyspace,
  streamName: string,
  entryId: string,
): Promise<{ redrivenAs: string } | undefined> {
  for (const [partition, key] of deadLetterKeys(keys, streamName).entries()) {
    const [entry] = await redis.xrange(key, entryId, entryId);
    if (!entry) continue;
    const letter = parseDeadLetter(entry);
    const redrivenAs = await redis.xadd(
      redriveKey(keys, streamName, partition),
      "*",
      PAYLOAD_FIELD,
      letter.payload,
      "originalId",
      letter.originalId,
    );
    await redis.xdel(key, entryId);
    return { redrivenAs: redrivenAs ?? "" };
  }
  return undefined;
}
