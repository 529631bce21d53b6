import type { Redis } from "ioredis";

/** Keys of one shape (ids replaced by `*`) and the Redis memory they hold. */
export interface MemoryKind {
  kind: string;
  keys: number;
  bytes: number;
}

/** A key segment that names one record (a uuid, hex id, timestamp or `instance|resultId`), not a kind. */
const ID_SEGMENT = /[0-9a-f]{8}|\d{5,}|\|/i;

/** The key's shape: the device tag and every id segment become `*`. */
export function keyKind(key: string): string {
  return key
    .replace(/\{([a-z]):[^}]*\}/g, "{$1:*}")
    .split(":")
    .map((segment) => (ID_SEGMENT.test(segment) ? "*" : segment))
    .join(":");
}

/**
 * What the keys under `prefix` hold, by shape, largest first (MEMORY USAGE of each key, every nested value
 * sampled). Keys of the synthetic retained results (`prefill-`) are left out: they are the prefill, not the load.
 */
export async function memoryByKind(redis: Redis, prefix: string): Promise<MemoryKind[]> {
  const kinds = new Map<string, MemoryKind>();
  let cursor = "0";
  do {
    const [next, keys] = await redis.scan(cursor, "MATCH", `${prefix}:*`, "COUNT", 1000);
    cursor = next;
    const measured = keys.filter((key) => !key.includes("prefill-"));
    const pipe = redis.pipeline();
    for (const key of measured) pipe.memory("USAGE", key, "SAMPLES", 0);
    const usage = (await pipe.exec()) ?? [];
    measured.forEach((key, index) => {
      const kind = keyKind(key);
      const entry = kinds.get(kind) ?? { kind, keys: 0, bytes: 0 };
      entry.keys += 1;
      entry.bytes += Number(usage[index]?.[1] ?? 0);
      kinds.set(kind, entry);
    });
  } while (cursor !== "0");
  return [...kinds.values()].sort((a, b) => b.bytes - a.bytes);
}

/**
 * Key shapes a setting caps whatever the retention and the results (a device's event log and run-update log, the
 * pipeline streams trimmed once consumed, dead letters): bounded per device or per stream, not a cost per result.
 */
const CAPPED_KINDS = /:event-log$|:run-updates$|:stream:\{|:dlq$/;

/** The kinds a result leaves for its retention, and the capped ones (see CAPPED_KINDS). */
export function byRetention(kinds: MemoryKind[]): { records: MemoryKind[]; capped: MemoryKind[] } {
  return {
    records: kinds.filter((kind) => !CAPPED_KINDS.test(kind.kind)),
    capped: kinds.filter((kind) => CAPPED_KINDS.test(kind.kind)),
  };
}

export const totalBytes = (kinds: MemoryKind[]) => kinds.reduce((sum, kind) => sum + kind.bytes, 0);
