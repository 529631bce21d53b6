import type { Redis } from "ioredis";
import type { z } from "zod";
import type { Keyspace } from "../redis/keyspace.js";

export const PAYLOAD_FIELD = "payload";

/** Appends a schema-checked payload to a pipeline stream; a payload that does not parse is never written. */
export async function appendToStream<S extends z.ZodType>(
  redis: Redis,
  keys: Keyspace,
  stream: { name: string; schema: S },
  payload: z.input<S>,
): Promise<string> {
  const checked = stream.schema.parse(payload);
  const id = await redis.xadd(keys.stream(stream.name), "*", PAYLOAD_FIELD, JSON.stringify(checked));
  return id as string;
}

/** Consumer groups are created by whoever starts first, idempotently. */
export async function ensureConsumerGroup(redis: Redis, streamKey: string, group: string): Promise<void> {
  try {
    await redis.xgroup("CREATE", streamKey, group, "0", "MKSTREAM");
  } catch (error) {
    if (!(error instanceof Error) || !error.message.startsWith("BUSYGROUP")) throw error;
  }
}
