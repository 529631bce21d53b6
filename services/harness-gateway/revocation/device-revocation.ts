import type { RedisClient } from "../../../libs/redis/redis-client.js";
import { z } from "zod";
import type { Keyspace } from "../../../libs/redis/keyspace.js";
import { NamedLuaScript } from "../../../libs/redis/lua-script.js";
import { HarnessDeviceKeys, revocationsChannel } from "../../../libs/harness-store/harness-keys.js";

/** How many of each the revocation deleted. */
const revokeReplySchema = z.object({
  reservations: z.number().int().nonnegative(),
  results: z.number().int().nonnegative(),
  events: z.number().int().nonnegative(),
});
const revokeScript = NamedLuaScript.fromFile<
  { now: number; revocationsChannel: string; deviceId: string },
  typeof revokeReplySchema
>(new URL("../lua/revoke-device-1.lua", import.meta.url), revokeReplySchema);

export interface RevocationReport {
  deviceId: string;
  reservations: number;
  results: number;
  events: number;
}

/** Removes a device's Harness data, refuses its older tokens and closes its sessions (used by the API and CLI). */
export async function revokeDevice(
  redis: RedisClient,
  keys: Keyspace,
  deviceId: string,
): Promise<RevocationReport> {
  const deleted = await revokeScript.run(redis, [new HarnessDeviceKeys(keys, deviceId).base], {
    now: Date.now(),
    revocationsChannel: revocationsChannel(keys),
    deviceId,
  });
  return { deviceId, ...deleted };
}
