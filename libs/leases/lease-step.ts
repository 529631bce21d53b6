import { z } from "zod";
import type { RedisClient } from "../redis/redis-client.js";
import { LuaScript } from "../redis/lua-script.js";

/** 1 while the lease is (still) ours after the step, 0 when another replica holds it. */
const holdLeaseScript = LuaScript.fromFile(
  new URL("./lua/hold-lease-1.lua", import.meta.url),
  z.union([z.literal(0), z.literal(1)]),
);

export type LeaseStep = "acquire" | "renew" | "release";

/** One step on a lease key held by `owner` for `ttlMs`; true while the lease is ours afterwards. */
export async function holdLease(
  redis: RedisClient,
  key: string,
  owner: string,
  ttlMs: number,
  step: LeaseStep,
): Promise<boolean> {
  return (await holdLeaseScript.run(redis, [key], [owner, ttlMs, step])) === 1;
}
