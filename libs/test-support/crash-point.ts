import type { RedisClient } from "../redis/redis-client.js";
import { z } from "zod";
import type { Keyspace } from "../redis/keyspace.js";

/**
 * The config fields a crash test sets: FAILPOINT=<service>.<point> names the one point the process is to die at.
 * Honoured only with NODE_ENV=test, so a stray variable never kills a production process.
 */
export const crashPointEnv = {
  FAILPOINT: z.string().optional(),
  NODE_ENV: z.string().optional(),
};
export type CrashPointSettings = { FAILPOINT?: string | undefined; NODE_ENV?: string | undefined };

/**
 * Fault injection for crash tests: the process SIGKILLs itself at the armed point, once per key prefix (a Redis
 * flag remembers it fired, so a process restarted with the same environment runs through).
 */
export class CrashPoint {
  private readonly armed: string | undefined;

  constructor(
    settings: CrashPointSettings,
    private readonly redis: RedisClient,
    private readonly keys: Keyspace,
  ) {
    this.armed = settings.NODE_ENV === "test" && settings.FAILPOINT ? settings.FAILPOINT : undefined;
  }

  async reach(name: string): Promise<void> {
    if (this.armed !== name) return;
    const first = await this.redis.set(this.keys.key("failpoint", name), "fired", "NX");
    if (first === "OK") process.kill(process.pid, "SIGKILL");
  }
}
