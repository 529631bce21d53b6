import { z } from "zod";
import { HarnessDeviceKeys } from "../../../libs/harness-store/harness-keys.js";
import type { Logger } from "../../../libs/logging/logger.js";
import type { RedisClient } from "../../../libs/redis/redis-client.js";
import type { Keyspace } from "../../../libs/redis/keyspace.js";
import { NamedLuaScript } from "../../../libs/redis/lua-script.js";
import type { NextDue } from "../../../libs/retention/retention-index.js";
import { harnessRetentionIndex } from "../../../libs/retention/retention-keys.js";
import { startPeriodicSweep } from "../../../libs/retention/retention-sweeper.js";

/** How many records went, and when the device comes due again (absent: nothing left to expire). */
const expiryReplySchema = z.object({
  removed: z.number().int().nonnegative(),
  nextDue: z.number().int().nonnegative().optional(),
});
const expireRetained = NamedLuaScript.fromFile<
  {
    now: number;
    eventRetentionMs: number;
    resultRetentionMs: number;
    receiptRetentionMs: number;
    limit: number;
  },
  typeof expiryReplySchema
>(new URL("../lua/expire-retained-1.lua", import.meta.url), expiryReplySchema);

/** Records removed per kind per expiry step; a device with more left is due again at once. */
const REMOVALS_PER_STEP = 512;

export interface HarnessRetentionSettings {
  eventRetentionMs: number;
  /** Results and the evidence markers that name them. */
  resultRetentionMs: number;
  receiptRetentionMs: number;
  sweepIntervalMs: number;
}

export const harnessRetentionSettingsOf = (config: {
  EVENT_RETENTION_SECONDS: number;
  RESULT_RETENTION_SECONDS: number;
  RECEIPT_RETENTION_SECONDS: number;
  RETENTION_SWEEP_INTERVAL_MS: number;
}): HarnessRetentionSettings => ({
  eventRetentionMs: config.EVENT_RETENTION_SECONDS * 1000,
  resultRetentionMs: config.RESULT_RETENTION_SECONDS * 1000,
  receiptRetentionMs: config.RECEIPT_RETENTION_SECONDS * 1000,
  sweepIntervalMs: config.RETENTION_SWEEP_INTERVAL_MS,
});

/** One device's expiry step: removes what is past retention, answers when the device comes due again. */
export async function expireHarnessDevice(
  redis: RedisClient,
  keys: Keyspace,
  deviceId: string,
  settings: HarnessRetentionSettings,
  now = Date.now(),
): Promise<NextDue> {
  const { removed, nextDue } = await expireRetained.run(redis, [new HarnessDeviceKeys(keys, deviceId).base], {
    now,
    eventRetentionMs: settings.eventRetentionMs,
    resultRetentionMs: settings.resultRetentionMs,
    receiptRetentionMs: settings.receiptRetentionMs,
    limit: REMOVALS_PER_STEP,
  });
  if (removed >= REMOVALS_PER_STEP) return now;
  return nextDue;
}

/** The result-producer's periodic sweep of `<p>:h:retention-due`: only devices that are due are touched. */
export function startHarnessRetentionSweep(
  redis: RedisClient,
  keys: Keyspace,
  settings: HarnessRetentionSettings,
  log: Logger,
) {
  const index = harnessRetentionIndex(redis, keys);
  return startPeriodicSweep(
    "harness-retention",
    settings.sweepIntervalMs,
    () => index.sweep((deviceId) => expireHarnessDevice(redis, keys, deviceId, settings)),
    log,
  );
}
