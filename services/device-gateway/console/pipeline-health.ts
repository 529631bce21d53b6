import type { Redis } from "ioredis";
import { z } from "zod";
import { STREAM_CATALOG } from "../../../libs/contract/catalog.js";
import type { Keyspace } from "../../../libs/redis/keyspace.js";
import { newestDeadLetters, type DeadLetter } from "../../../libs/streams/dead-letters.js";

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

const groupInfoSchema = z
  .array(z.union([z.string(), z.number(), z.null()]))
  .transform((flat) => Object.fromEntries(pairs(flat)))
  .pipe(
    z.object({
      name: z.string(),
      consumers: z.number(),
      pending: z.number(),
      "last-delivered-id": z.string(),
      lag: z.number().nullable().optional(),
    }),
  );

function pairs(flat: (string | number | null)[]): [string, string | number | null][] {
  const result: [string, string | number | null][] = [];
  for (let index = 0; index + 1 < flat.length; index += 2)
    result.push([String(flat[index]), flat[index + 1] ?? null]);
  return result;
}

/** XINFO GROUPS of every group-read stream: its length, and each group's consumers, pending entries and lag. */
export async function streamGroups(
  redis: Redis,
  keys: Keyspace,
): Promise<{ stream: string; length: number; groups: GroupHealth[] }[]> {
  return Promise.all(
    GROUP_STREAMS.map(async (stream) => {
      const key = keys.stream(stream);
      const length = await redis.xlen(key);
      if (length === 0 && (await redis.exists(key)) === 0) return { stream, length, groups: [] };
      const infos = z.array(groupInfoSchema).parse(await redis.xinfo("GROUPS", key));
      return {
        stream,
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
    }),
  );
}

export const DEAD_LETTERS_LISTED = 50;

/** The newest dead letters of every group-read stream, with each stream's total. */
export async function deadLetters(
  redis: Redis,
  keys: Keyspace,
): Promise<{ stream: string; total: number; entries: DeadLetter[] }[]> {
  return Promise.all(
    GROUP_STREAMS.map(async (stream) => ({
      stream,
      ...(await newestDeadLetters(redis, keys, stream, DEAD_LETTERS_LISTED)),
    })),
  );
}
