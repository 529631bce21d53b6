import type { Redis } from "ioredis";
import type { Keyspace } from "../../../libs/redis/keyspace.js";
import { LuaScript } from "../../../libs/redis/lua-script.js";
import { HarnessDeviceKeys, revocationsChannel } from "../store/harness-keys.js";

const revokeScript = LuaScript.fromFile(new URL("../lua/revoke-device-1.lua", import.meta.url));

export interface RevocationReport {
  deviceId: string;
  reservations: number;
  results: number;
  events: number;
}

/** Removes a device's Harness data, refuses its older tokens and closes its sessions (used by the API and CLI). */
export async function revokeDevice(
  redis: Redis,
  keys: Keyspace,
  deviceId: string,
): Promise<RevocationReport> {
  const [reservations, results, events] = (await revokeScript.run(
    redis,
    [new HarnessDeviceKeys(keys, deviceId).base],
    [Date.now(), revocationsChannel(keys), deviceId],
  )) as [number, number, number];
  return { deviceId, reservations, results, events };
}
