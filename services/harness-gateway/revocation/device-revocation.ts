import type { RedisClient } from "../../../libs/redis/redis-client.js";
import { z } from "zod";
import type { Keyspace } from "../../../libs/redis/keyspace.js";
import { LuaScript } from "../../../libs/redis/lua-script.js";
import { HarnessDeviceKeys, revocationsChannel } from "../../../libs/harness-store/harness-keys.js";

/** {reservations, results, events}: how many of each the revocation deleted. */
const revokeScript = LuaScript.fromFile(
  new URL("../lua/revoke-device-1.lua", import.meta.url),
  z.tuple([z.number().int(), z.number().int(), z.number().int()]),
);

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
  const [reservations, results, events] = await revokeScript.run(
    redis,
    [new HarnessDeviceKeys(keys, deviceId).base],
    [Date.now(), revocationsChannel(keys), deviceId],
  );
  return { deviceId, reservations, results, events };
}
