import type { Redis } from "ioredis";
import type { Keyspace } from "../../libs/redis/keyspace.js";
import { LuaScript } from "../../libs/redis/lua-script.js";

const script = LuaScript.fromFile(new URL("./lua/delivery-marker-1.lua", import.meta.url));

/**
 * Per-input marker that makes dispatch idempotent on deliveryId across redelivery and runner crashes:
 * - `claimed`: taken, nothing recorded yet, so nothing was written: writing now is safe.
 * - `recorded`: the outbound record exists; it may or may not have been written: never write again (fails closed).
 * - `written` / `handed_over` / `undeliverable`: done.
 */
export type DeliveryState = "claimed" | "recorded" | "written" | "handed_over" | "undeliverable";

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
    const state = String(
      await script.run(this.redis, [this.key(agentId, deliveryId)], ["claim", "", this.ttlSeconds]),
    );
    return { writable: state === "new" || state === "claimed", state };
  }

  async advance(agentId: string, deliveryId: string, state: DeliveryState): Promise<void> {
    await script.run(this.redis, [this.key(agentId, deliveryId)], ["advance", state, this.ttlSeconds]);
  }
}
