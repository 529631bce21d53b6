import type { Redis } from "ioredis";
import { z } from "zod";
import type { Keyspace } from "../../libs/redis/keyspace.js";
import { LuaScript } from "../../libs/redis/lua-script.js";

/**
 * Per-input marker that makes dispatch idempotent on deliveryId across redelivery and runner crashes:
 * - `claimed`: taken, nothing recorded yet, so nothing was written: writing now is safe.
 * - `recorded`: the outbound record exists; it may or may not have been written: never write again (fails closed).
 * - `written` / `handed_over` / `undeliverable`: done.
 */
const deliveryStateSchema = z.enum(["claimed", "recorded", "written", "handed_over", "undeliverable"]);
export type DeliveryState = z.infer<typeof deliveryStateSchema>;

/** "new" on the first claim, else the state stored before. */
const claimScript = LuaScript.fromFile(
  new URL("./lua/claim-delivery-1.lua", import.meta.url),
  z.union([z.literal("new"), deliveryStateSchema]),
);

export class DeliveryMarkers {
  constructor(
    private readonly redis: Redis,
    private readonly keys: Keyspace,
    private readonly ttlSeconds: number,
  ) {}

  key(agentId: string, deliveryId: string): string {
    return `${this.keys.agent(agentId)}:runner:delivery:${deliveryId}`;
  }

  /** True when this input may be written now (first sight, or claimed before a crash but never recorded). */
  async claim(agentId: string, deliveryId: string): Promise<{ writable: boolean; state: string }> {
    const state = await claimScript.run(this.redis, [this.key(agentId, deliveryId)], [this.ttlSeconds]);
    return { writable: state === "new" || state === "claimed", state };
  }

  async advance(agentId: string, deliveryId: string, state: DeliveryState): Promise<void> {
    await this.redis.set(this.key(agentId, deliveryId), state, "EX", this.ttlSeconds);
  }
}
