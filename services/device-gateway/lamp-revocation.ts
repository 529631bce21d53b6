import type { Redis } from "ioredis";
import { lampRevocationsChannel, OsDeviceKeys } from "../../libs/os-store/os-keys.js";
import type { Keyspace } from "../../libs/redis/keyspace.js";

export interface LampRevocationReport {
  deviceId: string;
  revokedAt: string;
}

/**
 * Revokes a device's Lamp credentials on the OS side: tokens issued until now are refused at `/v1/lamp/ws` and the OS
 * API, and every gateway closes the device's open sockets. Its runs and results stay (they are the owner's history);
 * a token issued afterwards works again.
 */
export async function revokeLamp(
  redis: Redis,
  keys: Keyspace,
  deviceId: string,
  now = Date.now(),
): Promise<LampRevocationReport> {
  await redis
    .multi()
    .set(new OsDeviceKeys(keys, deviceId).revokedAt, String(now))
    .publish(lampRevocationsChannel(keys), deviceId)
    .exec();
  return { deviceId, revokedAt: new Date(now).toISOString() };
}

/** When the device was last revoked (epoch ms), if ever. */
export async function lampRevokedAt(
  redis: Redis,
  keys: Keyspace,
  deviceId: string,
): Promise<number | undefined> {
  const value = await redis.get(new OsDeviceKeys(keys, deviceId).revokedAt);
  return value === null ? undefined : Number(value);
}

/** Calls `revoked(deviceId)` for each revocation published by any gateway or the CLI (on a dedicated connection). */
export async function watchLampRevocations(
  subscriber: Redis,
  keys: Keyspace,
  revoked: (deviceId: string) => void,
): Promise<void> {
  const channel = lampRevocationsChannel(keys);
  subscriber.on("message", (from: string, deviceId: string) => {
    if (from === channel) revoked(deviceId);
  });
  await subscriber.subscribe(channel);
}
