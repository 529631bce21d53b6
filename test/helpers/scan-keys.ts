import { Cluster } from "ioredis";
import type { RedisClient } from "../../libs/redis/redis-client.js";

/** Every key matching `pattern`: SCAN on each master of a cluster (a Cluster client scans one node of its choosing). */
export async function scanKeys(redis: RedisClient, pattern: string): Promise<string[]> {
  const nodes = redis instanceof Cluster ? redis.nodes("master") : [redis];
  const found: string[] = [];
  for (const node of nodes) {
    let cursor = "0";
    do {
      const [next, keys] = await node.scan(cursor, "MATCH", pattern, "COUNT", 1_000);
      found.push(...keys);
      cursor = next;
    } while (cursor !== "0");
  }
  return found;
}
