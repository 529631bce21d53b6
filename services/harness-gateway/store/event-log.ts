import type { RedisClient } from "../../../libs/redis/redis-client.js";
import { z } from "zod";
import type { Keyspace } from "../../../libs/redis/keyspace.js";
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

export interface LoggedEvent {
  eventId: number;
  body: StoredEvent;
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
    const device = this.device(deviceId);
    const [head, floor] = await this.redis.mget(device.eventSequence, device.eventFloor);
    return { head: Number(head ?? 0), floor: Number(floor ?? 0) };
  }

  async after(deviceId: string, cursor: number, limit: number): Promise<LoggedEvent[]> {
    const device = this.device(deviceId);
    const ids = await this.redis.zrangebyscore(device.events, `(${cursor}`, "+inf", "LIMIT", 0, limit);
    if (ids.length === 0) return [];
    const bodies = await this.redis.hmget(device.eventBodies, ...ids);
    const events: LoggedEvent[] = [];
    ids.forEach((id, index) => {
      const raw = bodies[index];
      // A body trimmed between the two reads is simply gone, like any trimmed event.
      if (raw) events.push({ eventId: Number(id), body: storedEventSchema.parse(JSON.parse(raw)) });
    });
    return events;
  }

  async result(deviceId: string, resultId: string): Promise<StoredResult | undefined> {
    const fields = await this.redis.hgetall(this.device(deviceId).result(resultId));
    return fields.payload ? storedResultSchema.parse(fields) : undefined;
  }

  async openResync(deviceId: string): Promise<{ head: number; resultIds: string[] }> {
    const [head, resultIds] = await openResyncScript.run(this.redis, [this.device(deviceId).base], []);
    return { head, resultIds };
  }
}
