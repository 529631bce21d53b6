import type { RedisClient } from "../../libs/redis/redis-client.js";
import { z } from "zod";
import {
  parseHarnessSessionRecord,
  type HarnessSessionRecord,
} from "../../libs/os-store/harness-session-record.js";
import { activeDevices } from "../../libs/os-store/device-activity.js";
import { OsDeviceKeys } from "../../libs/os-store/os-keys.js";
import type { Keyspace } from "../../libs/redis/keyspace.js";

export interface DeviceOverview {
  deviceId: string;
  /** The device-gateway instance holding its Lamp socket, while one does. */
  lampGateway: string | undefined;
  /** The router's Harness session, `live` only while the router that wrote it still holds the device's lease. */
  harness: (HarnessSessionRecord & { live: boolean }) | undefined;
  leaseHolder: string | undefined;
  cursor: { transportInstanceId: string; cursor: string } | undefined;
  runs: number;
  pendingRuns: number;
}

/** The devices the routers serve, each with its Lamp and Harness sessions and run counts, read in one round trip. */
export async function deviceOverviews(
  redis: RedisClient,
  keys: Keyspace,
  partitions: number,
): Promise<DeviceOverview[]> {
  const deviceIds = await activeDevices(redis, keys, partitions);
  const batch = redis.pipeline();
  for (const deviceId of deviceIds) {
    const device = new OsDeviceKeys(keys, deviceId);
    batch
      .get(device.lampPresence)
      .get(device.lease)
      .hgetall(device.cursor)
      .hgetall(device.harnessSession)
      .zcard(device.runs)
      .zcard(device.pendingRuns);
  }
  const replies = (await batch.exec()) ?? [];
  return deviceIds.map((deviceId, index) => {
    const [presence, lease, cursor, session, runs, pending] = replies
      .slice(index * 6, index * 6 + 6)
      .map(([error, value]) => {
        if (error) throw error;
        return value;
      });
    const record = parseHarnessSessionRecord(hashOf(session));
    const cursorFields = hashOf(cursor);
    const leaseHolder = textOf(lease);
    return {
      deviceId,
      lampGateway: textOf(presence),
      harness: record && { ...record, live: record.state === "open" && record.router === leaseHolder },
      leaseHolder,
      cursor:
        cursorFields.serverInstanceId && cursorFields.cursor !== undefined
          ? { transportInstanceId: cursorFields.serverInstanceId, cursor: cursorFields.cursor }
          : undefined,
      runs: Number(runs),
      pendingRuns: Number(pending),
    };
  });
}

const textOf = (value: unknown) => z.string().nullable().parse(value) ?? undefined;
const hashOf = (value: unknown) => z.record(z.string(), z.string()).parse(value);
