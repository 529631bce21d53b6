import type { RedisClient } from "../../../libs/redis/redis-client.js";
import type { Logger } from "../../../libs/logging/logger.js";
import type { Keyspace } from "../../../libs/redis/keyspace.js";
import { HarnessDeviceKeys, undispatchedDevicesKey } from "../../../libs/harness-store/harness-keys.js";
import type { ReservationStore } from "./reservation-store.js";

/** Devices taken from the index per round trip; the sweep goes on until none is due. */
const DEVICES_PER_READ = 100;

/**
 * Repairs a crash between reserve and dispatch: reservations still marked undispatched after `minAgeMs` are
 * appended to harness.dispatch now. A rare second append is harmless (the engine-runner dedupes by deliveryId).
 *
 * The work is found through `<p>:h:undispatched-devices` (deviceId by the reservedAt of its oldest undispatched
 * reservation), never a keyspace SCAN: an idle sweep costs one ZRANGEBYSCORE whatever the store holds.
 */
export async function sweepUndispatched(
  redis: RedisClient,
  keys: Keyspace,
  reservations: ReservationStore,
  minAgeMs: number,
  log: Logger,
): Promise<number> {
  const index = undispatchedDevicesKey(keys);
  let swept = 0;
  const visited = new Set<string>();
  for (;;) {
    const cutoff = Date.now() - minAgeMs;
    const due = (await redis.zrangebyscore(index, "-inf", cutoff, "LIMIT", 0, DEVICES_PER_READ)).filter(
      (deviceId) => !visited.has(deviceId),
    );
    if (due.length === 0) break;
    for (const deviceId of due) {
      visited.add(deviceId);
      const device = new HarnessDeviceKeys(keys, deviceId);
      for (const idempotencyKey of await redis.zrangebyscore(device.undispatched, "-inf", cutoff)) {
        if (await reservations.dispatchLeftover(deviceId, idempotencyKey)) swept += 1;
      }
      await settle(redis, index, device, deviceId);
    }
  }
  if (swept > 0) log.warn({ swept }, "dispatched reservations left undispatched by a crash");
  return swept;
}

/**
 * Re-scores the device by its oldest undispatched reservation, or takes it out of the index when it has none.
 * Taking it out races with a reserve of the same device, which runs its reserve step and then `ZADD NX` (see
 * ReservationStore.reserve). So the removal is ZREM first, then a second look at the device: a reservation whose
 * ZADD NX came before the ZREM (and was a no-op, the device being listed) was stored before it too, so the second
 * look sees it and lists the device again; one whose ZADD NX comes after the ZREM lists the device itself.
 */
async function settle(redis: RedisClient, index: string, device: HarnessDeviceKeys, deviceId: string) {
  const oldest = await oldestUndispatched(redis, device);
  if (oldest !== undefined) {
    await redis.zadd(index, oldest, deviceId);
    return;
  }
  await redis.zrem(index, deviceId);
  const appeared = await oldestUndispatched(redis, device);
  if (appeared !== undefined) await redis.zadd(index, "NX", appeared, deviceId);
}

async function oldestUndispatched(
  redis: RedisClient,
  device: HarnessDeviceKeys,
): Promise<number | undefined> {
  const [, score] = await redis.zrange(device.undispatched, 0, 0, "WITHSCORES");
  return score === undefined ? undefined : Number(score);
}
