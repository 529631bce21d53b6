import { randomUUID } from "node:crypto";
import type { z } from "zod";
import type { StreamReading } from "../contract/catalog.js";
import { PartitionLeases } from "../leases/partition-leases.js";
import { groupExists } from "../streams/group-info.js";
import { StreamConsumer, type StreamConsumerOptions } from "../streams/stream-consumer.js";
import { streamPartitions, type PartitionedStream } from "../streams/stream-partitions.js";
import type { ServiceContext } from "./service-context.js";

export type ServiceConsumerOptions<S extends z.ZodType> = Pick<
  StreamConsumerOptions<S>,
  "group" | "handle" | "handleBatch" | "ownerOf" | "affects" | "onDeadLetter"
> & { stream: PartitionedStream & StreamConsumerOptions<S>["stream"] & { reading: StreamReading } };

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
 *
 * A stream read in order (`reading.inOrder`) is read by one replica per partition at a time: the group's replicas
 * share the partitions by lease (libs/leases/partition-leases.ts), a replica reads only those it holds, and one that
 * takes a partition over claims whatever the previous holder left pending before it reads on.
 */
export async function startServiceConsumer<S extends z.ZodType>(
  ctx: ServiceContext,
  options: ServiceConsumerOptions<S>,
): Promise<ServiceConsumer> {
  const partitions = streamPartitions(options.stream, ctx.keys);
  const partitioned = options.stream.partitionBy !== undefined;
  const consumerOf = (partition: number, takeOver: boolean) =>
    new StreamConsumer({
      connections: ctx.connections,
      keys: ctx.keys,
      consumer: ctx.consumerName,
      settings: ctx.consumerSettings,
      log: ctx.log,
      metrics: ctx.metrics,
      ...options,
      partition: partitioned ? partition : undefined,
      takeOver,
    });
  const { reading } = options.stream;
  if (reading.kind === "consumer-group" && reading.inOrder)
    return startLeasedConsumers(ctx, options, consumerOf);
  const consumers = partitions.map((partition) => consumerOf(partition, false));
  for (const consumer of consumers) {
    await consumer.start();
    ctx.health.addLiveness(consumer.name, () => consumer.isAlive());
    ctx.health.addReadiness(consumer.name, () => consumer.groupExists());
  }
  return { stop: async () => void (await Promise.all(consumers.map((consumer) => consumer.stop()))) };
}

/** The partitions this replica holds the lease of, each read by a consumer that took it over. */
async function startLeasedConsumers<S extends z.ZodType>(
  ctx: ServiceContext,
  options: ServiceConsumerOptions<S>,
  consumerOf: (partition: number, takeOver: boolean) => StreamConsumer<S>,
): Promise<ServiceConsumer> {
  const { name } = options.stream;
  const reading = new Map<number, StreamConsumer<S>>();
  const leases = new PartitionLeases({
    redis: ctx.connections.command,
    leaseKey: (partition) => `${ctx.keys.stream(name, partition)}:lease:${options.group}`,
    replicasKey: ctx.keys.key("stream-readers", name, options.group),
    owner: `${ctx.consumerName}-${randomUUID().slice(0, 8)}`,
    partitions: streamPartitions(options.stream, ctx.keys).length,
    ttlMs: ctx.base.STREAM_LEASE_TTL_MS,
    log: ctx.log.child({ stream: name, group: options.group }),
    changed: () => undefined,
    own: async (partition) => {
      const consumer = consumerOf(partition, true);
      await consumer.start();
      reading.set(partition, consumer);
      return {
        stop: async () => {
          reading.delete(partition);
          await consumer.stop();
        },
      };
    },
  });
  leases.start();
  const label = `${name}/${options.group} (in order)`;
  ctx.health.addLiveness(label, () => leases.isAlive() && [...reading.values()].every((c) => c.isAlive()));
  ctx.health.addReadiness(label, () =>
    groupExists(ctx.connections.command, ctx.keys.stream(name, 0), options.group),
  );
  return { stop: () => leases.stop() };
}
