import type { LoggerOptions } from "pino";
import { z } from "zod";
import { isRedisUnavailableMessage } from "./redis-errors.js";

const WARN_LEVEL = 40;
const entryWithError = z.object({
  err: z.union([z.string(), z.instanceof(Error).transform((error) => error.message)]),
});

/**
 * Every loop that retries on a timer (heartbeats, lease rounds, sweeps, the BullMQ worker) would log the same
 * "connection refused" on every turn while Redis is down. The outage itself is logged once by RedisConnections;
 * during it, warnings and errors whose `err` is a Redis connection error are counted instead of written, and the
 * count is reported in the "redis back" line. Any other entry is written as usual.
 */
export class OutageLogFilter {
  private down = false;
  private quieted = 0;

  readonly hooks: NonNullable<LoggerOptions["hooks"]>;

  constructor() {
    const quiets = (entry: unknown, level: number) => this.quiets(entry, level);
    this.hooks = {
      logMethod(args, method, level) {
        if (!quiets(args[0], level)) method.apply(this, args);
      },
    };
  }

  outageStarted(): void {
    this.down = true;
    this.quieted = 0;
  }

  /** Returns how many lines it kept out of the log during the outage. */
  outageEnded(): number {
    this.down = false;
    return this.quieted;
  }

  private quiets(entry: unknown, level: number): boolean {
    if (!this.down || level < WARN_LEVEL) return false;
    const parsed = entryWithError.safeParse(entry);
    if (!parsed.success || !isRedisUnavailableMessage(parsed.data.err)) return false;
    this.quieted += 1;
    return true;
  }
}
