import { z } from "zod";
import { flatRecord } from "../redis/flat-reply.js";
import type { RedisClient } from "../redis/redis-client.js";

const replyValue = z.union([z.string(), z.number(), z.null()]);

/** One group of an XINFO GROUPS reply: a flat [field, value, …] list turned into its named fields. */
const consumerGroupSchema = z
  .array(replyValue)
  .transform(flatRecord)
  .pipe(
    z.object({
      name: z.string(),
      consumers: z.number(),
      pending: z.number(),
      "last-delivered-id": z.string(),
      /** Entries not yet delivered to the group (Redis 7); null once a trim passed entries it never read. */
      lag: z.number().nullable().optional(),
    }),
  );
export type ConsumerGroupInfo = z.infer<typeof consumerGroupSchema>;

/** XINFO GROUPS of a stream, parsed. Redis answers an error for a stream that does not exist. */
export async function consumerGroupsOf(redis: RedisClient, streamKey: string): Promise<ConsumerGroupInfo[]> {
  return z.array(consumerGroupSchema).parse(await redis.xinfo("GROUPS", streamKey));
}

/** Whether the stream has the consumer group (false for a stream that does not exist, or Redis away). */
export async function groupExists(redis: RedisClient, streamKey: string, group: string): Promise<boolean> {
  try {
    return (await consumerGroupsOf(redis, streamKey)).some((info) => info.name === group);
  } catch {
    return false;
  }
}
