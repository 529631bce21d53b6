import type { RedisClient } from "../../libs/redis/redis-client.js";

/**
 * True once a consumer group has read every entry of the stream and acked it: whatever its service does with an
 * entry is done. A positive marker to wait on instead of sleeping to prove that nothing more happens.
 */
export async function groupDrained(redis: RedisClient, streamKey: string, group: string): Promise<boolean> {
  if ((await redis.exists(streamKey)) === 0) return true;
  const groups = (await redis.xinfo("GROUPS", streamKey)) as unknown[][];
  const info = groups.find((fields) => fields[1] === group);
  if (!info) return false;
  const field = (name: string) => info[info.indexOf(name) + 1];
  const last = (await redis.xrevrange(streamKey, "+", "-", "COUNT", 1))[0]?.[0];
  return Number(field("pending")) === 0 && (last === undefined || field("last-delivered-id") === last);
}

/** Every entry ever appended to the stream (XINFO STREAM `entries-added`): trimming never lowers it. 0 if absent. */
export async function entriesAdded(redis: RedisClient, streamKey: string): Promise<number> {
  if ((await redis.exists(streamKey)) === 0) return 0;
  const info = (await redis.xinfo("STREAM", streamKey)) as unknown[];
  return Number(info[info.indexOf("entries-added") + 1]);
}
