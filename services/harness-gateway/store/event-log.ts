import type { RedisClient } from "../../../libs/redis/redis-client.js";
import { z } from "zod";
import type { Keyspace } from "../../../libs/redis/keyspace.js";
import { flatRecord } from "../../../libs/redis/flat-reply.js";
import { LuaScript } from "../../../libs/redis/lua-script.js";
import { HarnessDeviceKeys } from "../../../libs/harness-store/harness-keys.js";
import {
  storedEventSchema,
  storedResultSchema,
  type StoredEvent,
  type StoredResult,
} from "../../../libs/harness-store/stored-records.js";

/** {head, resultIds}: the log head before the resync and the retained results it re-sends. */
const openResyncScript = LuaScript.fromFile(
  new URL("../lua/open-resync-1.lua", import.meta.url),
  z.tuple([z.number().int(), z.array(z.string())]),
);

/** {head, floor} of the device's log. */
const logBoundsScript = LuaScript.fromFile(
  new URL("../lua/log-bounds-1.lua", import.meta.url),
  z.tuple([z.number().int().nonnegative(), z.number().int().nonnegative()]),
);

/** {eventId, body, resultFields} of each event past the cursor (resultFields empty unless a stored result's). */
const eventsAfterScript = LuaScript.fromFile(
  new URL("../lua/events-after-1.lua", import.meta.url),
  z.array(z.tuple([z.string(), z.string(), z.array(z.string()).transform(flatRecord)])),
);

export interface LoggedEvent {
  eventId: number;
  body: StoredEvent;
  /** A result event's stored result, read with it (absent when it was trimmed meanwhile). */
  result?: StoredResult;
}

/** Read side of a device's event log and results (the result-producer writes them). */
export class DeviceEventLog {
  constructor(
    private readonly redis: RedisClient,
    private readonly keys: Keyspace,
  ) {}

  private device(deviceId: string): HarnessDeviceKeys {
    return new HarnessDeviceKeys(this.keys, deviceId);
  }

  /** `head`: last eventId handed out; `floor`: highest eventId trimmed (a resume below it missed events). */
  async bounds(deviceId: string): Promise<{ head: number; floor: number }> {
    const [head, floor] = await logBoundsScript.run(this.redis, [this.device(deviceId).base], []);
    return { head, floor };
  }

  /** Up to `limit` events past `cursor`, each result event with its stored result: one round trip. */
  async after(deviceId: string, cursor: number, limit: number): Promise<LoggedEvent[]> {
    const logged = await eventsAfterScript.run(this.redis, [this.device(deviceId).base], [cursor, limit]);
    return logged.map(([eventId, body, resultFields]) => {
      const result = storedResultOf(resultFields);
      return {
        eventId: Number(eventId),
        body: storedEventSchema.parse(JSON.parse(body)),
        ...(result ? { result } : {}),
      };
    });
  }

  async result(deviceId: string, resultId: string): Promise<StoredResult | undefined> {
    return storedResultOf(await this.redis.hgetall(this.device(deviceId).result(resultId)));
  }

  async openResync(deviceId: string): Promise<{ head: number; resultIds: string[] }> {
    const [head, resultIds] = await openResyncScript.run(this.redis, [this.device(deviceId).base], []);
    return { head, resultIds };
  }
}

function storedResultOf(fields: Record<string, string>): StoredResult | undefined {
  return fields.payload ? storedResultSchema.parse(fields) : undefined;
}
