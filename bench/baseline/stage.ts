import { Queue } from "bullmq";
import { Redis } from "ioredis";
import { z } from "zod";
import { ensureConsumerGroup } from "../../libs/streams/stream-writer.js";
import {
  BASELINE_GROUP,
  BASELINE_QUEUE,
  BASELINE_STAGES,
  BASELINE_STREAM_MAXLEN,
  baselineMessageSchema,
  streamKey,
} from "./baseline-message.js";

/**
 * One stage of the bare baseline chain, its own process: XREADGROUP COUNT 100 from stream s<n>, parse and
 * re-serialise each message, then MULTI { XADD s<n+1> per message; XACK } — or, for the last stage, BullMQ
 * addBulk followed by XACK. Prints `ready` once its group exists.
 */
const env = z
  .object({
    REDIS_URL: z.string().min(1),
    KEY_PREFIX: z.string().min(1),
    BASELINE_STAGE: z.coerce.number().int().min(1).max(BASELINE_STAGES),
  })
  .parse(process.env);

const stage = env.BASELINE_STAGE;
const input = streamKey(env.KEY_PREFIX, stage);
const last = stage === BASELINE_STAGES;
const redis = new Redis(env.REDIS_URL, { maxRetriesPerRequest: null });
const queue = last
  ? new Queue(BASELINE_QUEUE, { connection: redis, prefix: `${env.KEY_PREFIX}:bull` })
  : undefined;
const replySchema = z
  .array(z.tuple([z.string(), z.array(z.tuple([z.string(), z.array(z.string())]))]))
  .nullable();

await ensureConsumerGroup(redis, input, BASELINE_GROUP);
process.stdout.write("ready\n");

for (;;) {
  const reply = replySchema.parse(
    await redis.xreadgroup(
      "GROUP",
      BASELINE_GROUP,
      `stage-${stage}`,
      "COUNT",
      100,
      "BLOCK",
      1000,
      "STREAMS",
      input,
      ">",
    ),
  );
  const entries = reply?.[0]?.[1] ?? [];
  if (entries.length === 0) continue;
  const ids = entries.map(([id]) => id);
  const messages = entries.map(([, fields]) => ({
    ...baselineMessageSchema.parse(JSON.parse(fields[1] ?? "")),
    stage,
  }));
  if (queue) {
    await queue.addBulk(
      messages.map((message) => ({
        name: "result",
        data: message,
        opts: { removeOnComplete: true, removeOnFail: true },
      })),
    );
    await redis.xack(input, BASELINE_GROUP, ...ids);
  } else {
    const output = streamKey(env.KEY_PREFIX, stage + 1);
    const transaction = redis.multi();
    for (const message of messages)
      transaction.xadd(
        output,
        "MAXLEN",
        "~",
        BASELINE_STREAM_MAXLEN,
        "*",
        "payload",
        JSON.stringify(message),
      );
    transaction.xack(input, BASELINE_GROUP, ...ids);
    await transaction.exec();
  }
}
