import { z } from "zod";
import type { Logger } from "../../../libs/logging/logger.js";
import { OsDeviceKeys } from "../../../libs/os-store/os-keys.js";
import type { RedisClient } from "../../../libs/redis/redis-client.js";
import type { Keyspace } from "../../../libs/redis/keyspace.js";
import { NamedLuaScript } from "../../../libs/redis/lua-script.js";
import type { NextDue } from "../../../libs/retention/retention-index.js";
import { osRetentionIndex } from "../../../libs/retention/retention-keys.js";
import { startPeriodicSweep } from "../../../libs/retention/retention-sweeper.js";

/** What one expiry step removed, and when the device comes due again (absent: it retains nothing). */
const expiryReply = z.object({
  removedRuns: z.number().int().nonnegative(),
  removedResults: z.number().int().nonnegative(),
  removedLogEntries: z.number().int().nonnegative(),
  nextDue: z.number().int().positive().optional(),
});
const expireRetained = NamedLuaScript.fromFile<
  { now: number; retentionMs: number; recheckMs: number; limit: number },
  typeof expiryReply
>(new URL("../lua/expire-retained-1.lua", import.meta.url), expiryReply);

/** Runs looked at per expiry step (above the per-device bound on pending runs, so a page always moves on). */
const RUNS_PER_STEP = 256;

export interface OsRetentionSettings {
  /** Terminal runs and what hangs off them (results, lookups, outbox, playbacks, audit logs) are kept this long. */
  retentionMs: number;
  /** A device whose oldest run is still pending is looked at again this much later. */
  recheckMs: number;
  sweepIntervalMs: number;
}

/** One device's expiry step: removes what is past retention, answers when the device comes due again. */
export async function expireOsDevice(
  redis: RedisClient,
  keys: Keyspace,
  deviceId: string,
  settings: OsRetentionSettings,
  now = Date.now(),
): Promise<NextDue> {
  const base = new OsDeviceKeys(keys, deviceId).base;
  const { nextDue } = await expireRetained.run(redis, [base], {
    now,
    retentionMs: settings.retentionMs,
    recheckMs: settings.recheckMs,
    limit: RUNS_PER_STEP,
  });
  return nextDue;
}

/** The run-resolver's periodic sweep of `<p>:os:retention-due`: only devices that are due are touched. */
export function startOsRetentionSweep(
  redis: RedisClient,
  keys: Keyspace,
  settings: OsRetentionSettings,
  log: Logger,
) {
  const index = osRetentionIndex(redis, keys);
  return startPeriodicSweep(
    "os-retention",
    settings.sweepIntervalMs,
    () => index.sweep((deviceId) => expireOsDevice(redis, keys, deviceId, settings)),
    log,
  );
}

/** The sweep's settings from the run-resolver's config; an old pending run is looked at again six rounds later. */
export const osRetentionSettingsOf = (config: {
  RESULT_RETENTION_MS: number;
  RETENTION_SWEEP_INTERVAL_MS: number;
}): OsRetentionSettings => ({
  retentionMs: config.RESULT_RETENTION_MS,
  recheckMs: config.RETENTION_SWEEP_INTERVAL_MS * 6,
  sweepIntervalMs: config.RETENTION_SWEEP_INTERVAL_MS,
});
