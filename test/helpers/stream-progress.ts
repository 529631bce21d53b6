import type { RedisClient } from "../../libs/redis/redis-client.js";
import { consumerGroupsOf } from "../../libs/streams/group-info.js";

/**
 * True once a consumer group has read every entry of the stream and acked it: whatever its service does with an
 * entry is done. A positive marker to wait on instead of sleeping to prove that nothing more happens.
 */
export async function groupDrained(redis: RedisClient, streamKey: string, group: string): Promise<boolean> {
  if ((await redis.exists(streamKey)) === 0) return true;
  const info = (await consumerGroupsOf(redis, streamKey)).find(({ name }) => name === group);
  if (!info) return false;
  const last = (await redis.xrevrange(streamKey, "+", "-", "COUNT", 1))[0]?.[0];
  return info.pending === 0 && (last === undefined || info["last-delivered-id"] === last);
}

export { entriesAdded, lastAppended } from "../../libs/streams/stream-info.js";
