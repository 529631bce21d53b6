import type { RedisClient } from "../../libs/redis/redis-client.js";
import { STREAM_CATALOG } from "../../libs/contract/catalog.js";
import type { Keyspace } from "../../libs/redis/keyspace.js";
import { consumerGroupsOf } from "../../libs/streams/group-info.js";
import { newestDeadLetters, type DeadLetter } from "../../libs/streams/dead-letters.js";

/** The pipeline streams read by consumer groups: the ones with lag to watch and dead letters to redrive. */
export const GROUP_STREAMS = Object.values(STREAM_CATALOG).flatMap((spec) =>
  "reading" in spec && spec.reading.kind === "consumer-group" && spec.keyspace === "pipeline"
    ? [spec.name]
    : [],
);

export interface GroupHealth {
  stream: string;
  group: string;
  consumers: number;
  pending: number;
  /** Entries not yet delivered to the group; null when Redis cannot tell (after a trim past the group). */
  lag: number | null;
  lastDeliveredId: string;
}

/** Every partition's key of a group-read stream (partition 0 alone when it is not partitioned). */
function partitionKeys(keys: Keyspace, stream: string): string[] {
  const spec = Object.values(STREAM_CATALOG).find((entry) => "name" in entry && entry.name === stream);
  const partitioned = spec !== undefined && "partitionBy" in spec && spec.partitionBy !== undefined;
  return Array.from({ length: partitioned ? keys.partitions : 1 }, (_, partition) =>
    keys.stream(stream, partition),
  );
}

/** One partition's XINFO GROUPS: its length and each group's consumers, pending entries and lag. */
async function partitionGroups(
  redis: RedisClient,
  stream: string,
  key: string,
): Promise<{ length: number; groups: GroupHealth[] }> {
  const length = await redis.xlen(key);
  if (length === 0 && (await redis.exists(key)) === 0) return { length, groups: [] };
  const infos = await consumerGroupsOf(redis, key);
  return {
    length,
    groups: infos.map((info) => ({
      stream,
      group: info.name,
      consumers: info.consumers,
      pending: info.pending,
      lag: info.lag ?? null,
      lastDeliveredId: info["last-delivered-id"],
    })),
  };
}

/** A group over all partitions: pending and lag summed, the most consumers any partition has, the newest id. */
function mergeGroups(partitions: GroupHealth[]): GroupHealth[] {
  const merged = new Map<string, GroupHealth>();
  for (const group of partitions) {
    const seen = merged.get(group.group);
    merged.set(
      group.group,
      seen === undefined
        ? { ...group }
        : {
            ...seen,
            consumers: Math.max(seen.consumers, group.consumers),
            pending: seen.pending + group.pending,
            lag: seen.lag === null || group.lag === null ? null : seen.lag + group.lag,
            lastDeliveredId:
              compareIds(group.lastDeliveredId, seen.lastDeliveredId) > 0
                ? group.lastDeliveredId
                : seen.lastDeliveredId,
          },
    );
  }
  return [...merged.values()];
}

function compareIds(a: string, b: string): number {
  const [aMs = 0, aSeq = 0] = a.split("-").map(Number);
  const [bMs = 0, bSeq = 0] = b.split("-").map(Number);
  return aMs - bMs || aSeq - bSeq;
}

/**
 * XINFO GROUPS of every group-read stream over its partitions: its length, and each group's consumers, pending
 * entries and lag.
 */
export async function streamGroups(
  redis: RedisClient,
  keys: Keyspace,
): Promise<{ stream: string; length: number; groups: GroupHealth[] }[]> {
  return Promise.all(
    GROUP_STREAMS.map(async (stream) => {
      const partitions = await Promise.all(
        partitionKeys(keys, stream).map((key) => partitionGroups(redis, stream, key)),
      );
      return {
        stream,
        length: partitions.reduce((sum, partition) => sum + partition.length, 0),
        groups: mergeGroups(partitions.flatMap((partition) => partition.groups)),
      };
    }),
  );
}

export const DEAD_LETTERS_LISTED = 50;

/** The newest dead letters of every group-read stream, with each stream's total. */
export async function deadLetters(
  redis: RedisClient,
  keys: Keyspace,
): Promise<{ stream: string; total: number; entries: DeadLetter[] }[]> {
  return Promise.all(
    GROUP_STREAMS.map(async (stream) => ({
      stream,
      ...(await newestDeadLetters(redis, keys, stream, DEAD_LETTERS_LISTED)),
    })),
  );
}
