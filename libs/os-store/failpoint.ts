import type { Redis } from "ioredis";
import type { Keyspace } from "../redis/keyspace.js";

/**
 * Fault injection for crash tests: when FAILPOINT names this point, the process SIGKILLs itself there, once per
 * key prefix (a Redis flag remembers it fired, so the restarted process runs through). Unset in production.
 */
export class Failpoint {
  constructor(
    private readonly armed: string | undefined,
    private readonly redis: Redis,
    private readonly keys: Keyspace,
  ) {}

  async reach(name: string): Promise<void> {
    if (this.armed !== name) return;
    const first = await this.redis.set(this.keys.key("failpoint", name), "fired", "NX");
    if (first === "OK") process.kill(process.pid, "SIGKILL");
  }
}
