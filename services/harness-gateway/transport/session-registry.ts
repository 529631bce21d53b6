import type { Logger } from "../../../libs/logging/logger.js";
import type { HarnessSession } from "./harness-session.js";
import type { Subscriber } from "../../../libs/redis/subscriber.js";

/**
 * The sessions this process holds, by device. Live delivery: a pub/sub notice names the device whose log grew (the
 * result-producer publishes it in the same script that appends the event). A notice is lost only while this
 * subscriber is disconnected, so every session catches up when the subscription is back; a slow periodic catch-up
 * is the safety net beyond that, and it costs one read per session whatever the log holds.
 */
export class SessionRegistry {
  private readonly byDevice = new Map<string, Set<HarnessSession>>();
  private timer: NodeJS.Timeout | undefined;

  constructor(
    private readonly subscriber: Subscriber,
    private readonly channels: { events: string; revocations: string },
    private readonly log: Logger,
  ) {}

  async start(catchUpMs: number): Promise<void> {
    this.subscriber.onMessage((channel, deviceId) => {
      if (channel === this.channels.events) this.notifyDevice(deviceId);
      if (channel === this.channels.revocations) this.closeDevice(deviceId, 4001, "revoked");
    });
    // After a reconnect every session may have missed a notice.
    this.subscriber.onResubscribed(() => this.notifyAll());
    await this.subscriber.subscribe(this.channels.events, this.channels.revocations);
    this.timer = setInterval(() => this.notifyAll(), catchUpMs);
    this.timer.unref();
  }

  /** Live delivery depends on the subscription; catch-up alone would still deliver, only later. */
  isSubscribed(): boolean {
    return this.subscriber.subscribed;
  }

  add(session: HarnessSession): void {
    const sessions = this.byDevice.get(session.deviceId) ?? new Set<HarnessSession>();
    sessions.add(session);
    this.byDevice.set(session.deviceId, sessions);
  }

  remove(session: HarnessSession): void {
    const sessions = this.byDevice.get(session.deviceId);
    sessions?.delete(session);
    if (sessions?.size === 0) this.byDevice.delete(session.deviceId);
  }

  get size(): number {
    let count = 0;
    for (const sessions of this.byDevice.values()) count += sessions.size;
    return count;
  }

  closeDevice(deviceId: string, code: number, reason: string): void {
    const sessions = this.byDevice.get(deviceId);
    if (!sessions) return;
    this.log.info({ deviceId, sessions: sessions.size, reason }, "closing device sessions");
    for (const session of sessions) session.close(code, reason);
  }

  async stop(): Promise<void> {
    clearInterval(this.timer);
    for (const deviceId of [...this.byDevice.keys()])
      this.closeDevice(deviceId, 1001, "server shutting down");
    this.subscriber.close();
  }

  private notifyDevice(deviceId: string): void {
    for (const session of this.byDevice.get(deviceId) ?? []) session.notify();
  }

  private notifyAll(): void {
    for (const deviceId of this.byDevice.keys()) this.notifyDevice(deviceId);
  }
}
