import { PIPELINE_STREAMS, QUEUE_CATALOG, type ServiceName } from "../../../libs/contract/catalog.js";
import { baseEnvSchema } from "../../../libs/config/env-fields.js";
import { Keyspace } from "../../../libs/redis/keyspace.js";
import { streamPartitions } from "../../../libs/streams/stream-partitions.js";

/**
 * One consumer group on one stream partition as a scaler and the group-creating init container see it: full
 * stream key, group name and partition (0 for a stream that is not partitioned).
 */
export interface ScaledGroup {
  service: ServiceName;
  stream: string;
  partition: number;
  streamKey: string;
  group: string;
  /** The stream is read in order: one replica per partition at a time, so replicas beyond the partitions idle. */
  inOrder: boolean;
}

/** The STREAM_PARTITIONS the manifests run with (the processes' default). */
export const RENDERED_PARTITIONS = baseEnvSchema.parse({}).STREAM_PARTITIONS;

/**
 * Every consumer group of the pipeline streams on every partition, names from the catalog; a per-instance group
 * (the engine-runner's per machine) is named for the overlay's machine.
 */
export function consumerGroups(
  keyPrefix: string,
  machineId: string,
  partitions = RENDERED_PARTITIONS,
): ScaledGroup[] {
  const keys = new Keyspace(keyPrefix, partitions);
  return PIPELINE_STREAMS.flatMap((stream) =>
    Object.values(stream.consumers).flatMap((consumer) => {
      const { group, service } = typeof consumer === "function" ? consumer(machineId) : consumer;
      return streamPartitions(stream, keys).map((partition) => ({
        service,
        stream: stream.name,
        partition,
        streamKey: keys.stream(stream.name, partition),
        group,
        inOrder: stream.reading.kind === "consumer-group" && stream.reading.inOrder,
      }));
    }),
  );
}

/** The BullMQ list of jobs waiting for a playback worker (BullMQ prefix `{<prefix>:bull}`). */
export function playbackWaitList(keyPrefix: string): { service: ServiceName; key: string } {
  const queue = QUEUE_CATALOG.lampPlayback;
  return { service: queue.worker, key: `${new Keyspace(keyPrefix).bullPrefix}:${queue.name}:wait` };
}
