import { mkdirSync } from "node:fs";
import { resolve } from "node:path";
import { RedisServerProcess } from "../../libs/redis/redis-server-process.js";

/**
 * `npm start` with no REDIS_URL: run a private redis-server (AOF on, data kept in REDIS_DATA_DIR, default
 * `.tmp/redis`) so the whole stack works on one machine with nothing configured.
 */
export async function startEmbeddedRedis(env: NodeJS.ProcessEnv): Promise<RedisServerProcess> {
  const dir = resolve(env.REDIS_DATA_DIR ?? ".tmp/redis");
  mkdirSync(dir, { recursive: true });
  return RedisServerProcess.start({ dir, appendonly: true, appendfsync: "everysec" });
}
