import { Cluster, type RedisOptions } from "ioredis";
import type { Logger } from "../logging/logger.js";
import type { OutageLogFilter } from "./outage-log-filter.js";
import type { RedisClient } from "./redis-client.js";
import { Subscriber } from "./subscriber.js";
import { WriteCoalescingRedis } from "./write-coalescing-redis.js";

/** A seed node of a Redis Cluster (REDIS_CLUSTER_NODES). */
export interface ClusterNode {
  host: string;
  port: number;
}

const retryStrategy = (attempt: number) => Math.min(attempt * 100, 1_000);

/** How long a command on the shared connection may take before it fails (it never waits out an outage). */
export const DEFAULT_COMMAND_TIMEOUT_MS = 3_000;

export interface RedisConnectionsOptions {
  commandTimeoutMs?: number;
  /** The host logger's filter: told when an outage starts and ends (see OutageLogFilter). */
  outageLog?: OutageLogFilter;
  /** Seeds of a Redis Cluster: every connection is an ioredis Cluster client and the URL is not used. */
  clusterNodes?: readonly ClusterNode[];
}

/**
 * Opens one connection of either kind with these options: a `Redis` to the URL, or a `Cluster` from the seeds
 * (the options then apply to each node's connection; the cluster client routes every command to its key's node).
 * On a cluster only the URL's credentials are used: the same user and password on every node. A single server's
 * connection sends the commands of one event-loop turn in one write (WriteCoalescingRedis); the Cluster client
 * builds its node connections itself, so on a cluster every command is still its own write.
 */
export function openRedisClient(
  url: string,
  clusterNodes: readonly ClusterNode[] | undefined,
  options: RedisOptions,
): RedisClient {
  if (clusterNodes === undefined || clusterNodes.length === 0) return new WriteCoalescingRedis(url, options);
  const { retryStrategy: clusterRetryStrategy, enableReadyCheck, lazyConnect, ...redisOptions } = options;
  return new Cluster([...clusterNodes], {
    clusterRetryStrategy,
    enableReadyCheck,
    lazyConnect,
    redisOptions: { ...credentialsOf(url), ...redisOptions },
    // A moved slot (a failover, a node restart) is retried on the node that now owns it.
    retryDelayOnFailover: 200,
    retryDelayOnClusterDown: 200,
  });
}

/** The user and password of a `redis://user:password@host` URL, if it names them. */
function credentialsOf(url: string): Pick<RedisOptions, "username" | "password"> {
  const { username, password } = new URL(url);
  return {
    ...(username ? { username: decodeURIComponent(username) } : {}),
    ...(password ? { password: decodeURIComponent(password) } : {}),
  };
}

/** The URL of one cluster node with the deployment URL's credentials. */
function nodeUrl(url: string, node: ClusterNode): string {
  const address = new URL(url);
  address.hostname = node.host;
  address.port = String(node.port);
  address.pathname = "";
  return address.toString();
}

/**
 * Hands out Redis connections: one shared connection for ordinary commands, a dedicated one for every blocking
 * loop (a blocked XREADGROUP must never hold up other commands) and one for every subscriber. All are closed
 * together.
 *
 * The two roles behave differently when Redis goes away. The command connection fails fast (bounded command
 * timeout, no retry of a command across reconnects), so a request answers at once and a handler's error reaches
 * its caller. A blocking connection keeps its command queued across reconnects, so a reader simply resumes. The
 * command connection's status is Redis's availability: one log line when it goes, one when it is back.
 *
 * On Redis Cluster every connection is a Cluster client with a connection per master node; a blocking read goes to
 * its key's node and blocks only that client's connection to it, which is why a blocking loop still gets a client
 * of its own. A process's connections are (1 + its blocking loops) x the masters: bounded by configuration.
 */
export class RedisConnections {
  readonly command: RedisClient;
  private readonly opened = new Set<RedisClient>();
  private readonly subscribers = new Set<Subscriber>();
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
  blocking(purpose: string): RedisClient {
    const connection = this.open(purpose, { maxRetriesPerRequest: null });
    connection.once("end", () => this.opened.delete(connection));
    return connection;
  }

  /**
   * A new pub/sub connection. On a cluster it is a plain connection to one node (every node hears every PUBLISH)
   * and moves to the next seed when that node fails.
   */
  subscriber(purpose: string): Subscriber {
    const { clusterNodes } = this.options;
    const addresses =
      clusterNodes === undefined || clusterNodes.length === 0
        ? [this.url]
        : clusterNodes.map((node) => nodeUrl(this.url, node));
    const subscriber = new Subscriber({
      addresses,
      connectionName: `lampline:${purpose}`,
      onError: (error) => (this.lastError = error.message),
    });
    this.subscribers.add(subscriber);
    return subscriber;
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
    for (const subscriber of this.subscribers) subscriber.close();
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

  private open(purpose: string, options: RedisOptions): RedisClient {
    const connection = openRedisClient(this.url, this.options.clusterNodes, {
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
