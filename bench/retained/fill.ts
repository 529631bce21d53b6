import type { Redis } from "ioredis";
import { z } from "zod";
import { Keyspace } from "../../libs/redis/keyspace.js";
import { NamedLuaScript } from "../../libs/redis/lua-script.js";
import { harnessRetentionIndex, osRetentionIndex } from "../../libs/retention/retention-keys.js";
import { sleep } from "../../libs/timing/sleep.js";

/** Results written per script call: about 20 writes each, so one call holds Redis for some tens of ms. */
const PER_CALL = 2_000;
const DAY_MS = 86_400_000;

/** The retained results are spread over this many devices, `prefill-device-<n % 1000>`; no bench Lamp is one. */
const PREFILL_DEVICES = 1_000;

const fillReplySchema = z.object({ written: z.number().int().nonnegative() });
const fillScript = NamedLuaScript.fromFile<
  { prefix: string; from: number; to: number; devices: number; at: number },
  typeof fillReplySchema
>(new URL("./fill-retained-0.lua", import.meta.url), fillReplySchema);

export interface RetainedFill {
  results: number;
  devices: number;
  /** Writing the results. */
  seconds: number;
  /** Waiting afterwards for the AOF rewrite the fill started. */
  aofSettleSeconds: number;
  usedMemoryBytes: number;
}

/**
 * Stores `count` synthetic retained results, played and resolved, in the store layout of docs/architecture.md
 * (both sides of the store), written server-side so a million take minutes, not an hour. Stamped an hour ago:
 * inside every default retention, so nothing of it is due. Each device is listed in both retention indexes as the
 * writers list it, and the fill returns only once the AOF rewrite it started has ended, so a measurement after it
 * sees retained data, not a rewrite's fork and copy-on-write.
 */
export async function fillRetainedResults(
  redis: Redis,
  prefix: string,
  count: number,
): Promise<RetainedFill> {
  const started = performance.now();
  const at = Date.now() - 3_600_000;
  for (let from = 0; from < count; from += PER_CALL)
    await fillScript.run(redis, [], {
      prefix,
      from,
      to: Math.min(count, from + PER_CALL),
      devices: PREFILL_DEVICES,
      at,
    });
  const devices = await listPrefilledDevices(redis, new Keyspace(prefix), Math.min(count, PREFILL_DEVICES));
  const written = performance.now();
  await settleAof(redis);
  const memory = await redis.info("memory");
  return {
    results: count,
    devices,
    seconds: (written - started) / 1000,
    aofSettleSeconds: (performance.now() - written) / 1000,
    usedMemoryBytes: Number(/^used_memory:(\d+)/m.exec(memory)?.[1] ?? 0),
  };
}

/** Due when its oldest record passes the default retention: in the future, so an idle sweep only reads the head. */
async function listPrefilledDevices(redis: Redis, keys: Keyspace, devices: number): Promise<number> {
  const now = Date.now();
  for (let n = 0; n < devices; n += 1) {
    await osRetentionIndex(redis, keys).list(`prefill-device-${n}`, now + 30 * DAY_MS);
    await harnessRetentionIndex(redis, keys).list(`prefill-device-${n}`, now + DAY_MS);
  }
  return devices;
}

async function settleAof(redis: Redis): Promise<void> {
  for (;;) {
    const persistence = await redis.info("persistence");
    if (!/aof_rewrite_in_progress:1/.test(persistence) && !/aof_rewrite_scheduled:1/.test(persistence))
      return;
    await sleep(1_000);
  }
}
