import type { z } from "zod";
import { StreamConsumer, type StreamConsumerOptions } from "../streams/stream-consumer.js";
import { streamPartitions, type PartitionedStream } from "../streams/stream-partitions.js";
import type { ServiceContext } from "./service-context.js";

export type ServiceConsumerOptions<S extends z.ZodType> = Pick<
  StreamConsumerOptions<S>,
  "group" | "handle" | "handleBatch"
> & { stream: PartitionedStream & StreamConsumerOptions<S>["stream"] };

/** A service's consumers of one stream, one per partition; stopped together. */
export interface ServiceConsumer {
  stop(): Promise<void>;
}

/**
 * A service's stream consumer with the host's connections, consumer name and settings, started, and reported by
 * /healthz (its read loops turn) and /readyz (its group exists). A partitioned stream is read by one consumer per
 * partition, each on its own blocking connection: a process holds STREAM_PARTITIONS readers per partitioned stream
 * it consumes, however many devices or agents there are, and each partition keeps the full group semantics (own
 * pending first, XAUTOCLAIM, dead letters in the partition's slot).
 */
export async function startServiceConsumer<S extends z.ZodType>(
  ctx: ServiceContext,
  options: ServiceConsumerOptions<S>,
): Promise<ServiceConsumer> {
  const partitions = streamPartitions(options.stream, ctx.keys);
  const consumers = partitions.map(
    (partition) =>
      new StreamConsumer({
        connections: ctx.connections,
        keys: ctx.keys,
        consumer: ctx.consumerName,
        settings: ctx.consumerSettings,
        log: ctx.log,
        metrics: ctx.metrics,
        ...options,
        partition: options.stream.partitionBy === undefined ? undefined : partition,
      }),
  );
  for (const consumer of consumers) {
    await consumer.start();
    ctx.health.addLiveness(consumer.name, () => consumer.isAlive());
    ctx.health.addReadiness(consumer.name, () => consumer.groupExists());
  }
  return { stop: async () => void (await Promise.all(consumers.map((consumer) => consumer.stop()))) };
}
