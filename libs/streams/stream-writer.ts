import type { RedisClient } from "../redis/redis-client.js";
import type { z } from "zod";
import type { Keyspace } from "../redis/keyspace.js";
import { streamKeyFor, streamPartitions, type PartitionedStream } from "./stream-partitions.js";

export const PAYLOAD_FIELD = "payload";

/**
 * Appends a schema-checked payload to a pipeline stream (to its owner's partition when the stream is partitioned);
 * a payload that does not parse is never written.
 */
export async function appendToStream<S extends z.ZodType>(
  redis: RedisClient,
  keys: Keyspace,
  stream: PartitionedStream & { schema: S },
  payload: z.input<S>,
): Promise<string> {
  const checked = stream.schema.parse(payload);
  const key = streamKeyFor(stream, keys, checked);
  const id = await redis.xadd(key, "*", PAYLOAD_FIELD, JSON.stringify(checked));
  return id as string;
}

/** Consumer groups are created by whoever starts first, idempotently. */
export async function ensureConsumerGroup(
  redis: RedisClient,
  streamKey: string,
  group: string,
): Promise<void> {
  try {
    await redis.xgroup("CREATE", streamKey, group, "0", "MKSTREAM");
  } catch (error) {
    if (!(error instanceof Error) || !error.message.startsWith("BUSYGROUP")) throw error;
  }
}

/** The group on every partition of the stream (one partition when it is not partitioned). */
export async function ensurePartitionGroups(
  redis: RedisClient,
  keys: Keyspace,
  stream: PartitionedStream,
  group: string,
): Promise<void> {
  for (const partition of streamPartitions(stream, keys))
    await ensureConsumerGroup(redis, keys.stream(stream.name, partition), group);
}
