import type { z } from "zod";
import { StreamConsumer, type StreamConsumerOptions } from "../streams/stream-consumer.js";
import type { ServiceContext } from "./service-context.js";

export type ServiceConsumerOptions<S extends z.ZodType> = Pick<
  StreamConsumerOptions<S>,
  "stream" | "group" | "handle" | "handleBatch"
>;

/**
 * A service's stream consumer with the host's connections, consumer name and settings, started, and reported by
 * /healthz (its read loop turns) and /readyz (its group exists).
 */
export async function startServiceConsumer<S extends z.ZodType>(
  ctx: ServiceContext,
  options: ServiceConsumerOptions<S>,
): Promise<StreamConsumer<S>> {
  const consumer = new StreamConsumer({
    connections: ctx.connections,
    keys: ctx.keys,
    consumer: ctx.consumerName,
    settings: ctx.consumerSettings,
    log: ctx.log,
    metrics: ctx.metrics,
    ...options,
  });
  await consumer.start();
  ctx.health.addLiveness(consumer.name, () => consumer.isAlive());
  ctx.health.addReadiness(consumer.name, () => consumer.groupExists());
  return consumer;
}
