import { Redis, type RedisOptions } from "ioredis";
import type { Logger } from "../logging/logger.js";

const retryStrategy = (attempt: number) => Math.min(attempt * 100, 2_000);

/**
 * Hands out Redis connections: one shared connection for ordinary commands and a dedicated one for every
 * blocking loop (a blocked XREADGROUP must never hold up other commands). All are closed together.
 */
export class RedisConnections {
  readonly command: Redis;
  private readonly opened: Redis[] = [];

  constructor(
    private readonly url: string,
    private readonly log: Logger,
  ) {
    this.command = this.open("command", { maxRetriesPerRequest: 20 });
  }

  /** A new connection reserved for one blocking loop; commands wait across reconnects instead of failing. */
  blocking(purpose: string): Redis {
    return this.open(purpose, { maxRetriesPerRequest: null });
  }

  async ping(): Promise<boolean> {
    try {
      return (await this.command.ping()) === "PONG";
    } catch {
      return false;
    }
  }

  async close(): Promise<void> {
    await Promise.all(
      this.opened.map(async (connection) => {
        try {
          await connection.quit();
        } catch {
          connection.disconnect();
        }
      }),
    );
  }

  private open(purpose: string, options: RedisOptions): Redis {
    const connection = new Redis(this.url, {
      retryStrategy,
      enableReadyCheck: true,
      connectionName: `lampline:${purpose}`,
      ...options,
    });
    connection.on("error", (error: Error) =>
      this.log.warn({ purpose, err: error.message }, "redis connection error"),
    );
    this.opened.push(connection);
    return connection;
  }
}
