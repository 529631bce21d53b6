/**
 * Which of `partitions` work partitions a device (or any other owner id) falls in: FNV-1a over the id's UTF-8
 * bytes, modulo the count. Stable across processes and releases, so every replica agrees without asking Redis.
 */
export function partitionOf(id: string, partitions: number): number {
  if (!Number.isInteger(partitions) || partitions < 1)
    throw new RangeError(`partitions must be a positive integer, got ${partitions}`);
  let hash = 0x811c9dc5;
  for (const byte of new TextEncoder().encode(id)) {
    hash ^= byte;
    hash = Math.imul(hash, 0x01000193) >>> 0;
  }
  return hash % partitions;
}
