import { z } from "zod";
import type { RedisClient } from "../redis/redis-client.js";
import { NamedLuaScript } from "../redis/lua-script.js";

/** `trimmed` to a MINID with how many entries left the stream, or `kept` when nothing may go. */
const trimReplySchema = z.discriminatedUnion("outcome", [
  z.object({
    outcome: z.literal("trimmed"),
    minId: z.string().min(1),
    removed: z.number().int().nonnegative(),
  }),
  z.object({ outcome: z.literal("kept") }),
]);
const trimConsumedScript = NamedLuaScript.fromFile<Record<string, never>, typeof trimReplySchema>(
  new URL("./lua/trim-consumed-1.lua", import.meta.url),
  trimReplySchema,
);

export interface TrimOutcome {
  /** Entries older than this id are gone; undefined when no group is past anything yet. */
  minId: string | undefined;
  removed: number;
}

/**
 * Removes the entries of one consumer-group stream (any stream key, a partition's as well) that every group has
 * been delivered past and that are pending for none: what no reader can ask for again. Trimming is by whole
 * stream nodes (`MINID ~`), so a few already-consumed entries may stay until the next call; never one still needed.
 */
export async function trimConsumedEntries(redis: RedisClient, streamKey: string): Promise<TrimOutcome> {
  const reply = await trimConsumedScript.run(redis, [streamKey], {});
  if (reply.outcome === "kept") return { minId: undefined, removed: 0 };
  return { minId: reply.minId, removed: reply.removed };
}

/** Keeps about the newest `maxLength` dead letters of a stream (`MAXLEN ~`): the oldest are dropped first. */
export async function capDeadLetters(
  redis: RedisClient,
  deadLetterKey: string,
  maxLength: number,
): Promise<number> {
  return redis.xtrim(deadLetterKey, "MAXLEN", "~", maxLength);
}
