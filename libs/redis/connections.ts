import { Redis, type RedisOptions } from "ioredis";
import type { Logger } from "../logging/logger.js";
import type { OutageLogFilter } from "./outage-log-filter.js";

const retryStrategy = (attempt: number) => Math.min(attempt * 100, 1_000);

/** How long a command on the shared connection may take before it fails (it never waits out an outage). */
export const DEFAULT_COMMAND_TIMEOUT_MS = 3_000;

export interface RedisConnectionsOptions {
  commandTimeoutMs?: number;
  /** The host logger's filter: told when an outage starts and ends (see OutageLogFilter). */
  outageLog?: OutageLogFilter;
}

/**
 * Hands out Redis connections: one shared connection for ordinary commands and a dedicated one for every
 * blocking loop (a blocked XREADGROUP must never hold up other commands). All are closed together.
 *
 * The two roles behave differently when Redis goes away. The command connection fails fast (bounded command
 * timeout, no retry of a command across reconnects), so a request answers at once and a handler's error reaches
 * its caller. A blocking connection keeps its command queued across reconnects, so a reader simply resumes. The
 * command connection's status is Redis's availability: one log line when it goes, one when it is back.
 */
export class RedisConnections {
  readonly command: Redis;
  private readonly opened = new Set<Redis>();
  private up = false;
  private downSince: number | undefined;
  private lastError: string | undefined;
  private waiters: (() => void)[] = [];
  private closing = false;

  constructor(
    private readonly url: string,
    private readonly log: Logger,
    private readonly options: RedisConnectionsOptions = {},
  ) {
    this.command = this.open("command", {
      maxRetriesPerRequest: 0,
      commandTimeout: options.commandTimeoutMs ?? DEFAULT_COMMAND_TIMEOUT_MS,
    });
    this.command.on("ready", () => this.markUp());
    this.command.on("close", () => this.markDown());
  }

  /** A new connection reserved for one blocking loop; commands wait across reconnects instead of failing. */
  blocking(purpose: string): Redis {
    const connection = this.open(purpose, { maxRetriesPerRequest: null });
    connection.once("end", () => this.opened.delete(connection));
    return connection;
  }

  /** Whether the shared connection is connected and ready now (no round trip). */
  get available(): boolean {
    return this.up;
  }

  /** Resolves when Redis is available (at once when it is). */
  untilAvailable(): Promise<void> {
    if (this.up) return Promise.resolve();
    return new Promise((resolve) => this.waiters.push(resolve));
  }

  /** The last connection error seen, for a message that says why Redis is unreachable. */
  get unavailableReason(): string {
    return this.lastError ?? "not connected";
  }

  async ping(): Promise<boolean> {
    if (!this.up) return false;
    try {
      return (await this.command.ping()) === "PONG";
    } catch {
      return false;
    }
  }

  /**
   * For a stop while Redis is down: a blocking read queued for Redis's return would hold its loop's stop forever, so
   * every blocking connection is closed for good and its queued commands fail. Between two reconnect attempts
   * ioredis's disconnect() only cancels the next attempt and leaves the queue waiting; one last attempt, made while
   * closing, is what fails the queue. Nothing was in flight to drain.
   */
  abandonBlockedReads(): void {
    for (const connection of this.opened) {
      if (connection === this.command) continue;
      const between = connection.status === "reconnecting";
      connection.disconnect();
      if (between) connection.connect().catch(() => undefined);
    }
  }

  async close(): Promise<void> {
    this.closing = true;
    await Promise.all(
      [...this.opened].map(async (connection) => {
        if (connection.status !== "ready") return connection.disconnect();
        try {
          await connection.quit();
        } catch {
          connection.disconnect();
        }
      }),
    );
  }

  private markUp(): void {
    this.up = true;
    if (this.downSince !== undefined) {
      const quietedLines = this.options.outageLog?.outageEnded();
      this.log.info({ downMs: Date.now() - this.downSince, quietedLines }, "redis back; resuming");
    }
    this.downSince = undefined;
    this.lastError = undefined;
    for (const resolve of this.waiters.splice(0)) resolve();
  }

  private markDown(): void {
    if (this.closing || this.downSince !== undefined) return;
    this.up = false;
    this.downSince = Date.now();
    this.log.error(
      { err: this.lastError ?? "connection closed" },
      "redis unavailable; answering 503 and pausing consumers until it is back",
    );
    this.options.outageLog?.outageStarted();
  }

  private open(purpose: string, options: RedisOptions): Redis {
    const connection = new Redis(this.url, {
      retryStrategy,
      enableReadyCheck: true,
      connectionName: `lampline:${purpose}`,
      ...options,
    });
    // Every reconnect attempt emits an error; availability is logged once per change (markDown/markUp) instead.
    connection.on("error", (error: Error) => (this.lastError = error.message));
    this.opened.add(connection);
    return connection;
  }
}
