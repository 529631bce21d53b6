import { z } from "zod";
import type { RedisClient } from "../redis/redis-client.js";
import { NamedLuaScript } from "../redis/lua-script.js";

export type LeaseStep = "acquire" | "renew" | "release";

/** `held` after an acquire or renew that found the lease free or ours, `released`, or `not_ours` (another holds it). */
const leaseStepReplySchema = z.object({ outcome: z.enum(["held", "released", "not_ours"]) });
const holdLeaseScript = NamedLuaScript.fromFile<
  { owner: string; ttlMs: number; step: LeaseStep },
  typeof leaseStepReplySchema
>(new URL("./lua/hold-lease-1.lua", import.meta.url), leaseStepReplySchema);

/** One step on a lease key held by `owner` for `ttlMs`; true when the step applied (the lease was free or ours). */
export async function holdLease(
  redis: RedisClient,
  key: string,
  owner: string,
  ttlMs: number,
  step: LeaseStep,
): Promise<boolean> {
  const { outcome } = await holdLeaseScript.run(redis, [key], { owner, ttlMs, step });
  return outcome !== "not_ours";
}
