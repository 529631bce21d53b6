import { z } from "zod";
import type { RedisClient } from "../../libs/redis/redis-client.js";
import { LuaScript } from "../../libs/redis/lua-script.js";
import type { ProtocolErrorRecord, RejectionRecord } from "../../libs/os-store/result-record.js";

const appendOnce = LuaScript.fromFile(
  new URL("./lua/append-once-1.lua", import.meta.url),
  z.union([z.literal(0), z.literal(1)]),
);

/** Appends to `B:rejections` / `B:protocol-errors` once per identity; returns whether this call recorded it. */
export async function recordOnce(
  redis: RedisClient,
  deviceBase: string,
  log: "rejections" | "protocol-errors",
  identity: string,
  record: RejectionRecord | ProtocolErrorRecord,
): Promise<boolean> {
  const added = await appendOnce.run(redis, [deviceBase], [log, identity, JSON.stringify(record)]);
  return added === 1;
}
