import { z } from "zod";
import type { RedisClient } from "../redis/redis-client.js";

/** One field of XINFO STREAM (a flat [field, value, …] reply). */
async function streamInfoField(redis: RedisClient, streamKey: string, field: string): Promise<unknown> {
  const info = z.array(z.unknown()).parse(await redis.xinfo("STREAM", streamKey));
  return info[info.indexOf(field) + 1];
}

/** Every entry ever appended to the stream (XINFO STREAM `entries-added`): trimming never lowers it. 0 if absent. */
export async function entriesAdded(redis: RedisClient, streamKey: string): Promise<number> {
  if ((await redis.exists(streamKey)) === 0) return 0;
  return z.number().parse(await streamInfoField(redis, streamKey, "entries-added"));
}

/** The id of the last entry ever appended to the stream (a trim does not move it); undefined if absent. */
export async function lastAppended(redis: RedisClient, streamKey: string): Promise<string | undefined> {
  if ((await redis.exists(streamKey)) === 0) return undefined;
  return z.string().parse(await streamInfoField(redis, streamKey, "last-generated-id"));
}
