import { z } from "zod";
import type { RedisClient } from "../redis/redis-client.js";
import { LuaScript } from "../redis/lua-script.js";

/** {minId, removed}: the MINID the stream was trimmed to ('' when nothing may go) and how many entries left it. */
const trimConsumedScript = LuaScript.fromFile(
  new URL("./lua/trim-consumed-1.lua", import.meta.url),
  z.tuple([z.string(), z.number().int().nonnegative()]),
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
  const [minId, removed] = await trimConsumedScript.run(redis, [streamKey], []);
  return { minId: minId === "" ? undefined : minId, removed };
}

/** Keeps about the newest `maxLength` dead letters of a stream (`MAXLEN ~`): the oldest are dropped first. */
export async function capDeadLetters(
  redis: RedisClient,
  deadLetterKey: string,
  maxLength: number,
): Promise<number> {
  return redis.xtrim(deadLetterKey, "MAXLEN", "~", maxLength);
}
