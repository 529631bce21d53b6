import type { RedisClient } from "../../../libs/redis/redis-client.js";
import { z } from "zod";
import type { Keyspace } from "../../../libs/redis/keyspace.js";
import { NamedLuaScript } from "../../../libs/redis/lua-script.js";
import { luaList } from "../../../libs/redis/lua-list.js";
import { HarnessDeviceKeys } from "../../../libs/harness-store/harness-keys.js";
import {
  storedEventSchema,
  storedResultSchema,
  type StoredEvent,
  type StoredResult,
} from "../../../libs/harness-store/stored-records.js";

/** The log head before the resync and the retained results it re-sends. */
const resyncReplySchema = z.object({ head: z.number().int().nonnegative(), resultIds: luaList(z.string()) });
const openResyncScript = NamedLuaScript.fromFile<Record<string, never>, typeof resyncReplySchema>(
  new URL("../lua/open-resync-1.lua", import.meta.url),
  resyncReplySchema,
);

/** The head and floor of the device's log. */
const boundsReplySchema = z.object({
  head: z.number().int().nonnegative(),
  floor: z.number().int().nonnegative(),
});
const logBoundsScript = NamedLuaScript.fromFile<Record<string, never>, typeof boundsReplySchema>(
  new URL("../lua/log-bounds-1.lua", import.meta.url),
  boundsReplySchema,
);

/** Each event past the cursor with its body, and a result event's stored result fields while it is stored. */
const eventsReplySchema = z.object({
  events: luaList(
    z.object({
      eventId: z.number().int().positive(),
      body: z.string(),
      result: z.record(z.string(), z.string()).optional(),
    }),
  ),
});
const eventsAfterScript = NamedLuaScript.fromFile<
  { cursor: number; limit: number },
  typeof eventsReplySchema
>(new URL("../lua/events-after-1.lua", import.meta.url), eventsReplySchema);

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
    return logBoundsScript.run(this.redis, [this.device(deviceId).base], {});
  }

  /** Up to `limit` events past `cursor`, each result event with its stored result: one round trip. */
  async after(deviceId: string, cursor: number, limit: number): Promise<LoggedEvent[]> {
    const { events } = await eventsAfterScript.run(this.redis, [this.device(deviceId).base], {
      cursor,
      limit,
    });
    return events.map(({ eventId, body, result }) => {
      const stored = storedResultOf(result ?? {});
      return {
        eventId,
        body: storedEventSchema.parse(JSON.parse(body)),
        ...(stored ? { result: stored } : {}),
      };
    });
  }

  async result(deviceId: string, resultId: string): Promise<StoredResult | undefined> {
    return storedResultOf(await this.redis.hgetall(this.device(deviceId).result(resultId)));
  }

  async openResync(deviceId: string): Promise<{ head: number; resultIds: string[] }> {
    return openResyncScript.run(this.redis, [this.device(deviceId).base], {});
  }
}

function storedResultOf(fields: Record<string, string>): StoredResult | undefined {
  return fields.payload ? storedResultSchema.parse(fields) : undefined;
}
