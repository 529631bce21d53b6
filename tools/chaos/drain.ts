import type { RedisClient } from "../../libs/redis/redis-client.js";
import { z } from "zod";
import { PIPELINE_STREAMS } from "../../libs/contract/catalog.js";
import { OsDeviceKeys } from "../../libs/os-store/os-keys.js";
import type { Keyspace } from "../../libs/redis/keyspace.js";
import type { RunDeadlines } from "./campaign-plan.js";
import type { ChaosLamp } from "./chaos-lamp.js";
import { streamPartitions } from "../../libs/streams/stream-partitions.js";
import { scanKeys } from "../../test/helpers/scan-keys.js";
import { consumerGroupsOf } from "../../libs/streams/group-info.js";

export interface DrainOutcome {
  drainedMs: number;
  /** False when the system was still busy at the deadline (the check then runs on what is there). */
  quiet: boolean;
}

const ACTIVE_PLAYBACK = new Set(["queued", "sending"]);
const runDeadlineFieldsSchema = z.tuple([z.string(), z.coerce.number()]);

export interface DrainOptions {
  quietMs: number;
  maxMs: number;
  devices: string[];
  deadlines: RunDeadlines;
}

/**
 * Waits until the system has nothing left to do: no consumer group has pending entries, no playback is queued or
 * being sent, no run is pending before its deadline has passed (the router ends it then), and nothing moved
 * (stream lengths, playbacks and run.updates received) for `quietMs`.
 */
export async function drain(
  redis: RedisClient,
  keys: Keyspace,
  lamps: ChaosLamp[],
  options: DrainOptions,
): Promise<DrainOutcome> {
  const { quietMs, maxMs } = options;
  const started = Date.now();
  let last = "";
  let stableSince = Date.now();
  while (Date.now() - started < maxMs) {
    const snapshot = await activity(redis, keys, lamps, options).catch(() => undefined);
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
  redis: RedisClient,
  keys: Keyspace,
  lamps: ChaosLamp[],
  { devices, deadlines }: DrainOptions,
): Promise<{ busy: boolean; fingerprint: string }> {
  const lengths: number[] = [];
  let pending = 0;
  for (const stream of PIPELINE_STREAMS)
    for (const partition of streamPartitions(stream, keys)) {
      const key = keys.stream(stream.name, partition);
      lengths.push(await redis.xlen(key));
      if ((await redis.exists(key)) === 0) continue;
      for (const group of await consumerGroupsOf(redis, key)) pending += group.pending;
    }
  const activePlaybacks = await countActivePlaybacks(redis, keys);
  let runsBeforeDeadline = 0;
  for (const deviceId of devices)
    runsBeforeDeadline += await countRunsBeforeDeadline(redis, keys, deviceId, deadlines);
  const received = lamps.map((lamp) => [lamp.received.length, lamp.feed.length]);
  return {
    busy: pending > 0 || activePlaybacks > 0 || runsBeforeDeadline > 0,
    fingerprint: JSON.stringify([lengths, received, activePlaybacks, runsBeforeDeadline]),
  };
}

/** Pending runs whose deadline (plus the settle allowance) is still ahead: the router may yet end them. */
async function countRunsBeforeDeadline(
  redis: RedisClient,
  keys: Keyspace,
  deviceId: string,
  deadlines: RunDeadlines,
): Promise<number> {
  const os = new OsDeviceKeys(keys, deviceId);
  const runIds = await redis.zrange(os.runs, 0, -1);
  if (runIds.length === 0) return 0;
  const pipeline = redis.pipeline();
  for (const runId of runIds) pipeline.hmget(os.run(runId), "state", "voiceTargetExpiresAt");
  const now = Date.now();
  return ((await pipeline.exec()) ?? []).filter(([, fields]) => {
    const parsed = runDeadlineFieldsSchema.safeParse(fields);
    if (!parsed.success) return false;
    const [state, expiresAt] = parsed.data;
    return state === "pending" && expiresAt + deadlines.graceMs + deadlines.settleMs > now;
  }).length;
}

async function countActivePlaybacks(redis: RedisClient, keys: Keyspace): Promise<number> {
  const found = await scanKeys(redis, `${keys.prefix}:os:{d:*}:playback:*`);
  // One HGET each: a cluster's pipeline may not span slots.
  const states = await Promise.all(found.map((key) => redis.hget(key, "state")));
  return states.filter((state) => state !== null && ACTIVE_PLAYBACK.has(state)).length;
}
