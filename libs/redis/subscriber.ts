import { Redis } from "ioredis";

const reconnectDelayMs = (attempt: number) => Math.min(attempt * 100, 1_000);

export interface SubscriberOptions {
  /**
   * Where to subscribe: the server's URL, or a URL for every seed of a Redis Cluster. A PUBLISH on a cluster reaches
   * the subscribers of every node, so one node at a time serves; when it fails the next address is tried.
   */
  addresses: readonly string[];
  connectionName: string;
  /** Told each connection error (every failed attempt during an outage is one). */
  onError?: (error: Error) => void;
}

type MessageListener = (channel: string, message: string) => void;
type PatternListener = (pattern: string, channel: string, message: string) => void;

/**
 * A dedicated pub/sub connection that says when a subscription is back. A notice published while the connection is
 * down is lost, so whoever relies on notices re-reads what they announce: `onResubscribed` listeners run after
 * every reconnect, once Redis has acknowledged every channel and pattern again, so a re-read then misses nothing
 * published since. (ioredis's own auto-resubscribe emits `ready` before it re-sends SUBSCRIBE, and its Cluster
 * client moves its subscriber to another node without any event, so neither can say this.)
 *
 * Channels are subscribed only once a connection is ready: ioredis writes SUBSCRIBE at once during the handshake,
 * and the ready check that follows fails in subscriber mode and drops it (redis/ioredis#2037).
 */
export class Subscriber {
  private readonly channels = new Set<string>();
  private readonly patterns = new Set<string>();
  private readonly messageListeners = new Set<MessageListener>();
  private readonly patternListeners = new Set<PatternListener>();
  private readonly resubscribedListeners = new Set<() => void>();
  private connection: Redis | undefined;
  private live: Redis | undefined;
  private everSubscribed = false;
  private attempt = 0;
  private next = 0;
  private closed = false;
  private waiters: { resolve: (connection: Redis) => void; reject: (error: Error) => void }[] = [];
  private retry: NodeJS.Timeout | undefined;

  constructor(private readonly options: SubscriberOptions) {
    if (options.addresses.length === 0) throw new Error("a subscriber needs at least one address");
    this.connect();
  }

  /** Whether every channel and pattern is subscribed on a live connection now. */
  get subscribed(): boolean {
    return this.live !== undefined;
  }

  onMessage(listener: MessageListener): void {
    this.messageListeners.add(listener);
  }

  onPatternMessage(listener: PatternListener): void {
    this.patternListeners.add(listener);
  }

  /** After a reconnect, once every subscription is acknowledged again (not on the first connection). */
  onResubscribed(listener: () => void): void {
    this.resubscribedListeners.add(listener);
  }

  /** Resolves once Redis has acknowledged the channels: from then on no message is missed while the connection holds. */
  subscribe(...channels: string[]): Promise<void> {
    for (const channel of channels) this.channels.add(channel);
    return this.onLive((connection) => connection.subscribe(...channels));
  }

  psubscribe(...patterns: string[]): Promise<void> {
    for (const pattern of patterns) this.patterns.add(pattern);
    return this.onLive((connection) => connection.psubscribe(...patterns));
  }

  async unsubscribe(...channels: string[]): Promise<void> {
    for (const channel of channels) this.channels.delete(channel);
    await this.live?.unsubscribe(...channels);
  }

  close(): void {
    this.closed = true;
    clearTimeout(this.retry);
    this.live = undefined;
    this.connection?.disconnect();
    for (const waiter of this.waiters.splice(0)) waiter.reject(new Error("the subscriber is closed"));
  }

  /** Runs the step on the live connection, again on the next one if this one fails first. */
  private async onLive(step: (connection: Redis) => Promise<unknown>): Promise<void> {
    for (;;) {
      const connection = await this.untilLive();
      try {
        await step(connection);
        return;
      } catch (error) {
        if (this.closed) throw error;
      }
    }
  }

  private untilLive(): Promise<Redis> {
    if (this.closed) return Promise.reject(new Error("the subscriber is closed"));
    if (this.live) return Promise.resolve(this.live);
    return new Promise((resolve, reject) => this.waiters.push({ resolve, reject }));
  }

  private connect(): void {
    const { addresses, connectionName } = this.options;
    const address = addresses[this.next % addresses.length] ?? "";
    const connection = new Redis(address, {
      connectionName,
      enableReadyCheck: true,
      autoResubscribe: false,
      maxRetriesPerRequest: 0,
      retryStrategy: () => null,
    });
    this.connection = connection;
    connection.on("error", (error: Error) => this.options.onError?.(error));
    connection.on("message", (channel: string, message: string) => {
      for (const listener of this.messageListeners) listener(channel, message);
    });
    connection.on("pmessage", (pattern: string, channel: string, message: string) => {
      for (const listener of this.patternListeners) listener(pattern, channel, message);
    });
    connection.once("ready", () => void this.subscribeAll(connection));
    connection.once("end", () => this.lost(connection));
  }

  private async subscribeAll(connection: Redis): Promise<void> {
    try {
      if (this.channels.size > 0) await connection.subscribe(...this.channels);
      if (this.patterns.size > 0) await connection.psubscribe(...this.patterns);
    } catch {
      connection.disconnect();
      return;
    }
    if (connection !== this.connection || this.closed) return;
    this.attempt = 0;
    this.live = connection;
    for (const waiter of this.waiters.splice(0)) waiter.resolve(connection);
    if (this.everSubscribed) for (const listener of this.resubscribedListeners) listener();
    this.everSubscribed = true;
  }

  private lost(connection: Redis): void {
    if (connection !== this.connection || this.closed) return;
    this.live = undefined;
    this.attempt += 1;
    this.next += 1;
    this.retry = setTimeout(() => this.connect(), reconnectDelayMs(this.attempt));
  }
}
