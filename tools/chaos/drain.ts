import type { Redis } from "ioredis";
import { PIPELINE_STREAMS } from "../../libs/contract/catalog.js";
import type { Keyspace } from "../../libs/redis/keyspace.js";
import type { ChaosLamp } from "./chaos-lamp.js";

export interface DrainOutcome {
  drainedMs: number;
  /** False when the system was still busy at the deadline (the check then runs on what is there). */
  quiet: boolean;
}

const ACTIVE_PLAYBACK = new Set(["queued", "sending"]);

/**
 * Waits until the system has nothing left to do: no consumer group has pending entries, no playback is queued or
 * being sent, and nothing moved (stream lengths, playbacks received) for `quietMs`.
 */
export async function drain(
  redis: Redis,
  keys: Keyspace,
  lamps: Iterable<ChaosLamp>,
  { quietMs, maxMs }: { quietMs: number; maxMs: number },
): Promise<DrainOutcome> {
  const started = Date.now();
  let last = "";
  let stableSince = Date.now();
  while (Date.now() - started < maxMs) {
    const snapshot = await activity(redis, keys, lamps).catch(() => undefined);
    if (snapshot === undefined || snapshot.busy || snapshot.fingerprint !== last) {
      last = snapshot?.fingerprint ?? "";
      stableSince = Date.now();
    } else if (Date.now() - stableSince >= quietMs) {
      return { drainedMs: Date.now() - started, quiet: true };
    }
    await new Promise((resolve) => setTimeout(resolve, 1_000));
  }
  return { drainedMs: Date.now() - started, quiet: false };
}

async function activity(
  redis: Redis,
  keys: Keyspace,
  lamps: Iterable<ChaosLamp>,
): Promise<{ busy: boolean; fingerprint: string }> {
  const lengths: number[] = [];
  let pending = 0;
  for (const { name } of PIPELINE_STREAMS) {
    const key = keys.stream(name);
    lengths.push(await redis.xlen(key));
    if ((await redis.exists(key)) === 0) continue;
    const groups = (await redis.xinfo("GROUPS", key)) as unknown[][];
    for (const group of groups) pending += Number(group[group.indexOf("pending") + 1] ?? 0);
  }
  const activePlaybacks = await countActivePlaybacks(redis, keys);
  const received = [...lamps].reduce((sum, lamp) => sum + lamp.received.length, 0);
  return {
    busy: pending > 0 || activePlaybacks > 0,
    fingerprint: JSON.stringify([lengths, received, activePlaybacks]),
  };
}

async function countActivePlaybacks(redis: Redis, keys: Keyspace): Promise<number> {
  let active = 0;
  let cursor = "0";
  do {
    const [next, found] = await redis.scan(
      cursor,
      "MATCH",
      `${keys.prefix}:os:{d:*}:playback:*`,
      "COUNT",
      1_000,
    );
    cursor = next;
    if (found.length === 0) continue;
    const pipeline = redis.pipeline();
    for (const key of found) pipeline.hget(key, "state");
    const states = (await pipeline.exec()) ?? [];
    active += states.filter(([, state]) => typeof state === "string" && ACTIVE_PLAYBACK.has(state)).length;
  } while (cursor !== "0");
  return active;
}
