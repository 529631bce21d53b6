import { z } from "zod";
import { playbackStateSchema, type PlaybackState } from "../../../libs/contract/os-playback.js";
import type { Logger } from "../../../libs/logging/logger.js";
import type { Keyspace } from "../../../libs/redis/keyspace.js";
import type { Subscriber } from "../../../libs/redis/subscriber.js";

/** The channel the playback step publishes on when an ack moves a playback out of `sending`. */
export const playbackAcksChannel = (keys: Keyspace): string => `${keys.prefix}:os:playback-acks`;

const noticeSchema = z.object({ deviceId: z.string(), playbackId: z.string(), state: playbackStateSchema });

/** How a wait for one playback's ack ended: the state a notice carried, or no notice in time. */
export type AckNotice = PlaybackState | "no-notice";

export interface AckWait {
  /** The next notice for the playback, or "no-notice" after `timeoutMs` (or when the notices are closed). */
  next(timeoutMs: number): Promise<AckNotice>;
  /** Stops listening for the playback. */
  end(): void;
}

/**
 * Wakes the worker waiting for a playback's ack instead of it polling: one subscription per process to the channel
 * the ack step publishes on. A notice is a hint only: it may be lost (a reconnect), so a waiter also wakes after a
 * bounded time and reads the state itself.
 */
export class AckNotices {
  private readonly waiting = new Map<string, Set<(notice: AckNotice) => void>>();
  private readonly arrived = new Map<string, PlaybackState>();
  private closed = false;

  constructor(
    private readonly subscriber: Subscriber,
    private readonly keys: Keyspace,
    private readonly log: Logger,
  ) {}

  /** Resolves once subscribed: from then on no notice is missed while the connection holds. */
  async listen(): Promise<void> {
    this.subscriber.onMessage((_channel, message) => this.deliver(message));
    // A notice may have been lost while the connection was down: every waiter reads the state itself now.
    this.subscriber.onResubscribed(() => this.wakeAll());
    await this.subscriber.subscribe(playbackAcksChannel(this.keys));
  }

  /** Start listening before the playback is sent, so an ack that comes at once is not missed. */
  expect(deviceId: string, playbackId: string): AckWait {
    const id = `${deviceId}\n${playbackId}`;
    const resolvers = new Set<(notice: AckNotice) => void>();
    this.waiting.set(id, resolvers);
    return {
      next: (timeoutMs) => {
        const early = this.arrived.get(id);
        if (early !== undefined) {
          this.arrived.delete(id);
          return Promise.resolve(early);
        }
        if (this.closed) return Promise.resolve("no-notice");
        return new Promise<AckNotice>((resolve) => {
          const timer = setTimeout(() => settle("no-notice"), timeoutMs);
          const settle = (notice: AckNotice) => {
            clearTimeout(timer);
            resolvers.delete(settle);
            resolve(notice);
          };
          resolvers.add(settle);
        });
      },
      end: () => {
        this.waiting.delete(id);
        this.arrived.delete(id);
      },
    };
  }

  /** Every wait ends now with "no-notice" (the worker is stopping). */
  close(): void {
    this.closed = true;
    this.wakeAll();
    this.subscriber.close();
  }

  private wakeAll(): void {
    for (const resolvers of this.waiting.values()) for (const settle of [...resolvers]) settle("no-notice");
  }

  private deliver(message: string): void {
    let notice: z.infer<typeof noticeSchema>;
    try {
      notice = noticeSchema.parse(JSON.parse(message));
    } catch (error) {
      this.log.warn({ message, err: String(error) }, "malformed playback ack notice ignored");
      return;
    }
    const id = `${notice.deviceId}\n${notice.playbackId}`;
    const resolvers = this.waiting.get(id);
    if (!resolvers) return;
    if (resolvers.size === 0) this.arrived.set(id, notice.state);
    for (const settle of [...resolvers]) settle(notice.state);
  }
}
