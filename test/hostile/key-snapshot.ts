import type { RedisClient } from "../../libs/redis/redis-client.js";

/** key → a digest of its content (type and value; TTLs are left out because live keys refresh them). */
export type KeySnapshot = Map<string, string>;

/**
 * Every key matching the pattern with its content, to prove that a rejected input stored or changed nothing.
 * Streams are compared by the id of the last entry ever appended (an append changes it; the consumers' trimming of
 * consumed entries does not, even when it empties the stream), everything else by its full value.
 */
export async function snapshotKeys(
  redis: RedisClient,
  pattern: string,
  ignore?: RegExp,
): Promise<KeySnapshot> {
  const keys: string[] = [];
  let cursor = "0";
  do {
    const [next, found] = await redis.scan(cursor, "MATCH", pattern, "COUNT", 1000);
    cursor = next;
    keys.push(...found.filter((key) => !ignore?.test(key)));
  } while (cursor !== "0");
  keys.sort();
  const types = await replies(redis, keys, (pipe, key) => pipe.type(key));
  const values = await replies(redis, keys, (pipe, key, index) => {
    switch (types[index]) {
      case "hash":
        return pipe.hgetall(key);
      case "string":
        return pipe.get(key);
      case "zset":
        return pipe.zrange(key, 0, -1, "WITHSCORES");
      case "set":
        return pipe.smembers(key);
      case "list":
        return pipe.lrange(key, 0, -1);
      case "stream":
        return pipe.xinfo("STREAM", key);
      default:
        return pipe.exists(key);
    }
  });
  const snapshot: KeySnapshot = new Map();
  keys.forEach((key, index) => {
    const value = values[index];
    const normalized =
      types[index] === "hash"
        ? Object.entries(value as Record<string, string>).sort(([a], [b]) => (a < b ? -1 : 1))
        : types[index] === "set"
          ? [...(value as string[])].sort()
          : types[index] === "stream"
            ? lastGeneratedId(value as unknown[])
            : value;
    snapshot.set(key, `${types[index]}:${JSON.stringify(normalized)}`);
  });
  return snapshot;
}

/** What differs between two snapshots, one line per key (empty when nothing changed). */
export function snapshotChanges(before: KeySnapshot, after: KeySnapshot): string[] {
  const changes: string[] = [];
  for (const [key, value] of after) {
    const earlier = before.get(key);
    if (earlier === undefined) changes.push(`added ${key}`);
    else if (earlier !== value) changes.push(`changed ${key}`);
  }
  for (const key of before.keys()) if (!after.has(key)) changes.push(`removed ${key}`);
  return changes;
}

/** XINFO STREAM's `last-generated-id`: moves on every append and never on a trim. */
function lastGeneratedId(info: unknown[]): unknown {
  return info[info.indexOf("last-generated-id") + 1];
}

type Pipeline = ReturnType<RedisClient["pipeline"]>;

async function replies(
  redis: RedisClient,
  keys: string[],
  add: (pipe: Pipeline, key: string, index: number) => Pipeline,
): Promise<unknown[]> {
  if (keys.length === 0) return [];
  const pipe = redis.pipeline();
  keys.forEach((key, index) => add(pipe, key, index));
  const results = (await pipe.exec()) ?? [];
  return results.map(([error, value]) => {
    if (error) throw error;
    return value;
  });
}
