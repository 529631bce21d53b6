import type { RedisClient } from "../../libs/redis/redis-client.js";
import type { Counter } from "prom-client";
import type { WebSocket } from "ws";
import {
  readRunUpdateNotice,
  runUpdateFrame,
  runUpdateRecordSchema,
  type RunUpdateNotice,
  type RunUpdateRecord,
} from "../../libs/contract/run-update.js";
import { errorMessage } from "../../libs/errors/error-message.js";
import type { Logger } from "../../libs/logging/logger.js";
import { OsDeviceKeys, runUpdatesChannelPattern } from "../../libs/os-store/os-keys.js";
import type { Keyspace } from "../../libs/redis/keyspace.js";
import { parseEntryPayload } from "../../libs/streams/stream-entry.js";
import { lastAppended } from "../../libs/streams/stream-info.js";
import type { Subscriber } from "../../libs/redis/subscriber.js";

const PAGE = 100;

/** updateId of a `B:run-updates` entry id (`0-<updateId>`). */
const updateIdOf = (entryId: string) => Number(entryId.slice(entryId.indexOf("-") + 1));

interface FeedOptions {
  redis: RedisClient;
  keys: Keyspace;
  log: Logger;
  sent: Counter;
}

/**
 * One socket's position in its device's run.update log. Everything it sends goes through one chain, so a replay
 * answer is followed by exactly the updates after its cursor, in order, and never interleaves with live ones.
 */
class SocketFeed {
  private chain: Promise<void> = Promise.resolve();
  private pumpQueued = false;

  /** Where the socket is in the log; the first task of the chain sets it to the log's head at connect. */
  private cursor = 0;

  constructor(
    private readonly options: FeedOptions,
    private readonly device: OsDeviceKeys,
    private readonly socket: WebSocket,
  ) {
    this.enqueue(async () => {
      this.cursor = await this.head();
      // Anything appended between the head read and now is sent at once rather than at the next poke.
      await this.sendAfterCursor();
    });
  }

  /** Sends whatever the log holds after the cursor (coalesced: one pending pump covers every poke before it). */
  pump(): void {
    if (this.pumpQueued) return;
    this.pumpQueued = true;
    this.enqueue(async () => {
      this.pumpQueued = false;
      await this.sendAfterCursor();
    });
  }

  /**
   * An update a notice carried: sent as it is when it is the next one the socket needs, skipped when the socket is
   * already past it, and read from the log (with whatever else it missed) when notices were lost in between.
   */
  offer(updateId: number, update: RunUpdateRecord): void {
    this.enqueue(async () => {
      if (updateId <= this.cursor || this.socket.readyState !== this.socket.OPEN) return;
      if (updateId > this.cursor + 1) return this.sendAfterCursor();
      this.send(updateId, update);
    });
  }

  /** Answers `run.updates_since`, then replays from `after` and continues live. */
  resume(requestId: string, after: number): void {
    this.enqueue(async () => {
      const head = await this.head();
      const [oldest] = await this.options.redis.xrange(this.device.runUpdates, "-", "+", "COUNT", 1);
      const oldestId = oldest ? updateIdOf(oldest[0]) : head + 1;
      const truncated = after > head || oldestId > after + 1;
      this.cursor = Math.min(after, head);
      this.write({ type: "run.updates_since_result", requestId, after, head, truncated });
      await this.sendAfterCursor();
    });
  }

  private async head(): Promise<number> {
    return updateIdOf((await lastAppended(this.options.redis, this.device.runUpdates)) ?? "0-0");
  }

  private enqueue(task: () => Promise<void>): void {
    this.chain = this.chain.then(task).catch((error: unknown) => {
      this.options.log.warn(
        { deviceId: this.device.deviceId, err: errorMessage(error) },
        "run updates not sent; the next poke or sweep retries",
      );
    });
  }

  private async sendAfterCursor(): Promise<void> {
    for (;;) {
      if (this.socket.readyState !== this.socket.OPEN) return;
      const entries = await this.options.redis.xrange(
        this.device.runUpdates,
        `(0-${this.cursor}`,
        "+",
        "COUNT",
        PAGE,
      );
      for (const [id, fields] of entries) {
        const updateId = updateIdOf(id);
        const record = parseEntryPayload(runUpdateRecordSchema, fields);
        if (record.ok) this.send(updateId, record.value);
        else
          this.options.log.error(
            { deviceId: this.device.deviceId, id, err: record.error },
            "malformed run update",
          );
        this.cursor = updateId;
      }
      if (entries.length < PAGE) return;
    }
  }

  private send(updateId: number, update: RunUpdateRecord): void {
    this.write(runUpdateFrame(updateId, update));
    this.options.sent.inc();
    this.cursor = updateId;
  }

  private write(frame: Record<string, unknown>): void {
    if (this.socket.readyState === this.socket.OPEN) this.socket.send(JSON.stringify(frame));
  }
}

/**
 * Sends every Lamp socket its own device's run.update log: live from the moment it connects (the pub/sub notice each
 * append publishes carries the update; a reconnect of that subscription and a slow safety-net sweep re-read the
 * log), or from a cursor the Lamp names with `run.updates_since`. A socket only ever reads its own device's log.
 */
export class RunUpdateFeed {
  private readonly feeds = new Map<string, Map<WebSocket, SocketFeed>>();
  private readonly sweeper: NodeJS.Timeout;

  constructor(private readonly options: FeedOptions & { sweepIntervalMs: number }) {
    this.sweeper = setInterval(() => this.sweep(), options.sweepIntervalMs);
    this.sweeper.unref();
  }

  /**
   * Subscribes (on a dedicated connection) to every device's update channel. The append's own script publishes the
   * notice, so one is lost only while this subscriber is disconnected: every socket re-reads when it is back.
   */
  async listen(subscriber: Subscriber): Promise<void> {
    subscriber.onPatternMessage((_pattern, _channel, message) => {
      const { deviceId, notice } = readRunUpdateNotice(message);
      if (notice) this.offer(notice);
      else this.poke(deviceId);
    });
    subscriber.onResubscribed(() => this.sweep());
    await subscriber.psubscribe(runUpdatesChannelPattern(this.options.keys));
  }

  /**
   * Starts the socket at the log's head: it gets every update appended from now on. Called as the socket opens,
   * before any of its frames is handled, so a `run.updates_since` always finds its feed.
   */
  attach(deviceId: string, socket: WebSocket): void {
    const feeds = this.feeds.get(deviceId) ?? new Map<WebSocket, SocketFeed>();
    feeds.set(socket, new SocketFeed(this.options, new OsDeviceKeys(this.options.keys, deviceId), socket));
    this.feeds.set(deviceId, feeds);
  }

  detach(deviceId: string, socket: WebSocket): void {
    const feeds = this.feeds.get(deviceId);
    feeds?.delete(socket);
    if (feeds?.size === 0) this.feeds.delete(deviceId);
  }

  /** False when the socket is not attached (it closed meanwhile). */
  resume(deviceId: string, socket: WebSocket, requestId: string, after: number): boolean {
    const feed = this.feeds.get(deviceId)?.get(socket);
    feed?.resume(requestId, after);
    return feed !== undefined;
  }

  private offer({ deviceId, updateId, update }: RunUpdateNotice): void {
    for (const feed of this.feeds.get(deviceId)?.values() ?? []) feed.offer(updateId, update);
  }

  poke(deviceId: string): void {
    for (const feed of this.feeds.get(deviceId)?.values() ?? []) feed.pump();
  }

  close(): void {
    clearInterval(this.sweeper);
    this.feeds.clear();
  }

  private sweep(): void {
    for (const deviceId of this.feeds.keys()) this.poke(deviceId);
  }
}
