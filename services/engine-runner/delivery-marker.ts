import type { RedisClient } from "../../libs/redis/redis-client.js";
import { z } from "zod";
import type { Keyspace } from "../../libs/redis/keyspace.js";
import { AgentKeys } from "../../libs/redis/agent-keys.js";
import { NamedLuaScript } from "../../libs/redis/lua-script.js";

/**
 * Per-input marker that makes dispatch idempotent on deliveryId across redelivery and runner crashes:
 * - `claimed`: taken, nothing recorded yet, so nothing was written: writing now is safe.
 * - `waiting`: held in the runner's waiting list for another device's turn to end; only its release writes it.
 * - `recorded`: the outbound record exists; it may or may not have been written: never write again (fails closed).
 * - `written` / `handed_over` / `undeliverable` / `withdrawn` (a stop took it out of the waiting list): done.
 */
const deliveryStateSchema = z.enum([
  "claimed",
  "waiting",
  "recorded",
  "written",
  "handed_over",
  "undeliverable",
  "withdrawn",
]);
export type DeliveryState = z.infer<typeof deliveryStateSchema>;

/** `new` on the first claim, else `existing` with the state stored before. */
const claimReplySchema = z.discriminatedUnion("claim", [
  z.object({ claim: z.literal("new") }),
  z.object({ claim: z.literal("existing"), state: deliveryStateSchema }),
]);
const claimScript = NamedLuaScript.fromFile<{ ttlSeconds: number }, typeof claimReplySchema>(
  new URL("./lua/claim-delivery-1.lua", import.meta.url),
  claimReplySchema,
);

export class DeliveryMarkers {
  constructor(
    private readonly redis: RedisClient,
    private readonly keys: Keyspace,
    readonly ttlSeconds: number,
  ) {}

  key(agentId: string, deliveryId: string): string {
    return new AgentKeys(this.keys, agentId).deliveryMarker(deliveryId);
  }

  /** True when this input may be written now (first sight, or claimed before a crash but never recorded). */
  async claim(agentId: string, deliveryId: string): Promise<{ writable: boolean; state: string }> {
    const state = await this.claimOnce(agentId, deliveryId);
    return { writable: state === "new" || state === "claimed", state };
  }

  /** A waiting input may be written by its release unless something else already settled it. */
  async releasable(agentId: string, deliveryId: string): Promise<boolean> {
    const state = await this.claimOnce(agentId, deliveryId);
    return state === "waiting" || state === "new" || state === "claimed";
  }

  /** "new" on the first claim, else the state stored before. */
  private async claimOnce(agentId: string, deliveryId: string): Promise<"new" | DeliveryState> {
    const reply = await claimScript.run(this.redis, [this.key(agentId, deliveryId)], {
      ttlSeconds: this.ttlSeconds,
    });
    return reply.claim === "new" ? "new" : reply.state;
  }

  async advance(agentId: string, deliveryId: string, state: DeliveryState): Promise<void> {
    await this.redis.set(this.key(agentId, deliveryId), state, "EX", this.ttlSeconds);
  }
}
