import { z } from "zod";
import type { Keyspace } from "../redis/keyspace.js";
import { partitionOf } from "../redis/partitions.js";

/** What a stream says about its partitions (the catalog's `partitionBy`). */
export interface PartitionedStream {
  name: string;
  partitionBy?: "deviceId" | "agentId";
}

const OWNER_OF = {
  deviceId: z.object({ deviceId: z.string().min(1) }).transform(({ deviceId }) => deviceId),
  agentId: z.object({ agentId: z.string().min(1) }).transform(({ agentId }) => agentId),
} as const;

/** Who a payload belongs to (`deviceId d-1`, `agentId a-1`), when the stream is partitioned and the payload says. */
export function payloadOwner(stream: PartitionedStream, payload: unknown): string | undefined {
  if (stream.partitionBy === undefined) return undefined;
  const owner = OWNER_OF[stream.partitionBy].safeParse(payload);
  return owner.success ? `${stream.partitionBy} ${owner.data}` : undefined;
}

/** Every partition of the stream: 0..STREAM_PARTITIONS-1 when it is partitioned, else 0 alone. */
export function streamPartitions(stream: PartitionedStream, keys: Keyspace): number[] {
  const count = stream.partitionBy === undefined ? 1 : keys.partitions;
  return Array.from({ length: count }, (_, partition) => partition);
}

/** The partition a payload goes to: its owner's (device or agent), or 0 when the stream is not partitioned. */
export function partitionForPayload(stream: PartitionedStream, keys: Keyspace, payload: unknown): number {
  if (stream.partitionBy === undefined) return 0;
  return partitionOf(OWNER_OF[stream.partitionBy].parse(payload), keys.partitions);
}

/** The key of the partition a payload goes to. */
export function streamKeyFor(stream: PartitionedStream, keys: Keyspace, payload: unknown): string {
  return keys.stream(stream.name, partitionForPayload(stream, keys, payload));
}
