import { chmodSync, mkdirSync } from "node:fs";
import { join, resolve } from "node:path";
import { z } from "zod";
import { envInt } from "../../libs/config/env-fields.js";
import { parseConfig } from "../../libs/config/load-config.js";
import { RedisServerProcess, RedisServerStartError } from "../../libs/redis/redis-server-process.js";
import { sleep } from "../../libs/timing/sleep.js";
import { errorMessage } from "../../libs/errors/error-message.js";
import { DataDirLock } from "./data-dir-lock.js";
import { embeddedRedisPassword } from "./redis-password.js";

const embeddedRedisSchema = z.object({
  REDIS_DATA_DIR: z.string().min(1).default(".tmp/redis"),
  /** A fixed port for the embedded Redis; a free one when unset. */
  REDIS_PORT: envInt(0, 0, 65535),
});

/** The embedded Redis could not start (its port is taken, redis-server is missing): one line, nothing left running. */
export class EmbeddedRedisError extends Error {}

export interface EmbeddedRedis {
  /** With the password: for the services of this process only. */
  url: string;
  /** Without credentials: for logs. */
  address: string;
  dir: string;
  /** Stops redis-server (it flushes its AOF) and releases the data directory. */
  stop(): Promise<void>;
}

/** Restarts after a crash start at once and back off, doubling, up to this. */
const RESTART_BACKOFF_MAX_MS = 5_000;

/**
 * A crashed redis-server is started again on its port with its data (same directory, AOF), with backoff while it
 * cannot start, and the restart is said in one line. Until then the services answer 503 and their consumers wait.
 */
function superviseRestarts(server: RedisServerProcess, lock: DataDirLock): { stop(): void } {
  let stopped = false;
  server.onCrash((how) => {
    const crashedAt = Date.now();
    void (async () => {
      for (let attempt = 1; !stopped; attempt += 1) {
        try {
          await server.restart();
          lock.recordRedis(server.pid);
          process.stderr.write(
            `all-in-one: redis-server ${how}; restarted it at ${server.address} with its data in ${Date.now() - crashedAt} ms (attempt ${attempt})\n`,
          );
          return;
        } catch (error) {
          if (attempt === 1)
            process.stderr.write(
              `all-in-one: redis-server ${how}; cannot restart it yet (${errorMessage(error)}); retrying\n`,
            );
          await sleep(Math.min(100 * 2 ** (attempt - 1), RESTART_BACKOFF_MAX_MS));
        }
      }
    })();
  });
  return { stop: () => void (stopped = true) };
}

/**
 * `npm start` with no REDIS_URL: run a private redis-server (AOF on, data kept in REDIS_DATA_DIR, default
 * `.tmp/redis`, mode 0700, one writer at a time, a generated password) so the whole stack works on one machine
 * with nothing configured. It is restarted when it crashes (superviseRestarts).
 */
export async function startEmbeddedRedis(env: NodeJS.ProcessEnv): Promise<EmbeddedRedis> {
  const settings = parseConfig(embeddedRedisSchema, env);
  const dir = resolve(settings.REDIS_DATA_DIR);
  mkdirSync(dir, { recursive: true, mode: 0o700 });
  chmodSync(dir, 0o700);
  const lock = DataDirLock.acquire(dir);
  try {
    const server = await RedisServerProcess.start({
      dir,
      port: settings.REDIS_PORT === 0 ? undefined : settings.REDIS_PORT,
      password: embeddedRedisPassword(join(dir, "redis.password")),
      appendonly: true,
      appendfsync: "everysec",
    });
    lock.recordRedis(server.pid);
    const supervisor = superviseRestarts(server, lock);
    return {
      url: server.url,
      address: server.address,
      dir,
      async stop() {
        supervisor.stop();
        await server.stop();
        lock.release();
      },
    };
  } catch (error) {
    lock.release();
    if (error instanceof RedisServerStartError) throw new EmbeddedRedisError(`all-in-one: ${error.message}`);
    throw error;
  }
}
