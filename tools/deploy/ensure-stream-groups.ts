import { z } from "zod";
import { baseEnvSchema } from "../../libs/config/env-fields.js";
import { parseConfig } from "../../libs/config/load-config.js";
import { openRedisClient } from "../../libs/redis/connections.js";
import { exitOnStartupError } from "../../libs/service/service-host.js";
import { ensureConsumerGroup } from "../../libs/streams/stream-writer.js";
import { consumerGroups } from "./k8s/consumer-groups.js";

/**
 * Init container of every consumer Deployment: creates each consumer group of the catalog (idempotent, MKSTREAM)
 * before the pod starts, so the KEDA scalers that read `XINFO GROUPS` / `XPENDING` find their groups from the first
 * rollout on, whichever service starts first.
 */
const envSchema = baseEnvSchema
  .pick({ REDIS_CLUSTER_NODES: true, KEY_PREFIX: true, STREAM_PARTITIONS: true })
  .extend({ REDIS_URL: z.string().min(1), MACHINE_ID: z.string().min(1) });

try {
  const env = parseConfig(envSchema, process.env);
  const redis = openRedisClient(env.REDIS_URL, env.REDIS_CLUSTER_NODES, {
    maxRetriesPerRequest: 3,
    lazyConnect: true,
  });
  await redis.connect();
  const groups = consumerGroups(env.KEY_PREFIX, env.MACHINE_ID, env.STREAM_PARTITIONS);
  for (const { streamKey, group } of groups) await ensureConsumerGroup(redis, streamKey, group);
  await redis.quit();
  process.stdout.write(
    `stream groups ready: ${groups.map((entry) => `${entry.stream}/${entry.group}`).join(", ")}\n`,
  );
} catch (error) {
  exitOnStartupError(error);
}
