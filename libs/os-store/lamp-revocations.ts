import type { RedisClient } from "../redis/redis-client.js";
import type { Keyspace } from "../redis/keyspace.js";
import type { Subscriber } from "../redis/subscriber.js";
import { lampRevocationsChannel, OsDeviceKeys } from "./os-keys.js";

/** When the device (or operator) was last revoked at the OS (epoch ms), if ever. */
export async function lampRevokedAt(
  redis: RedisClient,
  keys: Keyspace,
  deviceId: string,
): Promise<number | undefined> {
  const value = await redis.get(new OsDeviceKeys(keys, deviceId).revokedAt);
  return value === null ? undefined : Number(value);
}

/**
 * Calls `revoked(deviceId)` for each revocation published by any gateway or the CLI (on a dedicated connection).
 * The revocation is published in the same MULTI that records it, so one is missed only while this subscriber is
 * disconnected: `recheckAll` runs whenever the subscription is (re)established.
 */
export async function watchLampRevocations(
  subscriber: Subscriber,
  keys: Keyspace,
  handlers: { revoked: (deviceId: string) => void; recheckAll: () => void },
): Promise<void> {
  const channel = lampRevocationsChannel(keys);
  subscriber.onMessage((from, deviceId) => {
    if (from === channel) handlers.revoked(deviceId);
  });
  subscriber.onResubscribed(handlers.recheckAll);
  await subscriber.subscribe(channel);
}
