import type { RedisClient } from "../../libs/redis/redis-client.js";
import { HarnessDeviceKeys, revocationsChannel } from "../../libs/harness-store/harness-keys.js";
import { lampRevocationsChannel, OsDeviceKeys } from "../../libs/os-store/os-keys.js";
import type { Keyspace } from "../../libs/redis/keyspace.js";

export interface LampRevocationReport {
  deviceId: string;
  revokedAt: string;
}

/**
 * Revokes a device everywhere at once, from the OS side: tokens issued until now are refused at `/v1/lamp/ws` and the
 * OS API (the OS's record) and at `/v1/harness/ws` (the Harness's record, same hash tag); every gateway closes the
 * device's Lamp sockets and Harness sessions, the router's included. `B:session-revoked` is set, so the router
 * opens no new session for it (and lets it go once idle) until its Lamp connects again with a newer token. Its runs and results stay (the
 * owner's history), and so does its Harness data (that is the Harness revocation's job).
 */
export async function revokeLamp(
  redis: RedisClient,
  keys: Keyspace,
  deviceId: string,
  now = Date.now(),
): Promise<LampRevocationReport> {
  // Marked before any session is told to close, so the router's reconnect finds the mark.
  await redis
    .multi()
    .set(new OsDeviceKeys(keys, deviceId).sessionRevoked, String(now))
    .set(new OsDeviceKeys(keys, deviceId).revokedAt, String(now))
    .set(new HarnessDeviceKeys(keys, deviceId).revokedAt, String(now))
    .publish(lampRevocationsChannel(keys), deviceId)
    .publish(revocationsChannel(keys), deviceId)
    .exec();
  return { deviceId, revokedAt: new Date(now).toISOString() };
}
