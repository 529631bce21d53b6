import type { Redis } from "ioredis";

/** What Redis counted so far: calls per command (INFO commandstats), socket reads served, memory in use. */
export interface RedisCounters {
  calls: Record<string, number>;
  readsProcessed: number;
  usedMemory: number;
}

/** Commands the bench itself sends to read these counters; they are left out of every delta. */
const OWN_COMMANDS = new Set(["info", "ping", "dbsize", "flushall", "config|resetstat", "config"]);

function field(info: string, name: string): number {
  const match = new RegExp(`^${name}:(\\d+)`, "m").exec(info);
  if (!match) throw new Error(`INFO has no ${name}`);
  return Number(match[1]);
}

export async function readCounters(redis: Redis): Promise<RedisCounters> {
  const [commandstats, stats, memory] = await Promise.all([
    redis.info("commandstats"),
    redis.info("stats"),
    redis.info("memory"),
  ]);
  const calls: Record<string, number> = {};
  for (const match of commandstats.matchAll(/^cmdstat_([^:]+):calls=(\d+)/gm)) {
    const name = match[1] as string;
    if (!OWN_COMMANDS.has(name)) calls[name] = Number(match[2]);
  }
  return {
    calls,
    readsProcessed: field(stats, "total_reads_processed"),
    usedMemory: field(memory, "used_memory"),
  };
}

/** Redis work over a window. */
export interface RedisDelta {
  commands: number;
  /** Socket reads Redis served: one per request or pipelined batch a client sent (a round trip). */
  roundTrips: number;
  byCommand: Record<string, number>;
  usedMemoryDelta: number;
}

export function redisDelta(before: RedisCounters, after: RedisCounters): RedisDelta {
  const byCommand: Record<string, number> = {};
  for (const [name, calls] of Object.entries(after.calls)) {
    const delta = calls - (before.calls[name] ?? 0);
    if (delta > 0) byCommand[name] = delta;
  }
  return {
    commands: Object.values(byCommand).reduce((sum, calls) => sum + calls, 0),
    // Each INFO reply the bench reads costs one socket read of its own (three per snapshot).
    roundTrips: after.readsProcessed - before.readsProcessed - 3,
    byCommand,
    usedMemoryDelta: after.usedMemory - before.usedMemory,
  };
}
