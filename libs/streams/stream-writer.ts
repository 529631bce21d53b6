import type { RedisClient } from "../redis/redis-client.js";
import { z } from "zod";
import { NamedLuaScript } from "../redis/lua-script.js";
import type { Keyspace } from "../redis/keyspace.js";
import { streamKeyFor, streamPartitions, type PartitionedStream } from "./stream-partitions.js";

export const PAYLOAD_FIELD = "payload";

const appendTailScript = NamedLuaScript.fromFile<
  { field: string; value: string; kept: number; idleExpiryMs: number },
  z.ZodObject<{ id: z.ZodString }>
>(new URL("./lua/append-tail-1.lua", import.meta.url), z.object({ id: z.string() }));

/** What bounds a stream whose entries matter only while new (a tail stream, read from `$`). */
export interface TailBounds {
  kind: "tail";
  kept: number;
  idleExpiryMs: number;
}

/**
 * Appends a schema-checked payload to a pipeline stream (to its owner's partition when the stream is partitioned);
 * a payload that does not parse is never written. A tail stream is capped and expires when nobody writes to it, in
 * the same step as the append (one script: a MULTI could hang an ioredis Cluster client through a failover), so no
 * write leaves it without its end.
 */
export async function appendToStream<S extends z.ZodType>(
  redis: RedisClient,
  keys: Keyspace,
  stream: PartitionedStream & {
    schema: S;
    reading?: TailBounds | { kind: "consumer-group" | "single-consumer" | "audit-log" | "update-log" };
  },
  payload: z.input<S>,
): Promise<string> {
  const checked = stream.schema.parse(payload);
  const key = streamKeyFor(stream, keys, checked);
  const value = JSON.stringify(checked);
  const tail = stream.reading;
  if (tail?.kind !== "tail") return (await redis.xadd(key, "*", PAYLOAD_FIELD, value)) as string;
  const appended = await appendTailScript.run(redis, [key], {
    field: PAYLOAD_FIELD,
    value,
    kept: tail.kept,
    idleExpiryMs: tail.idleExpiryMs,
  });
  return appended.id;
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
