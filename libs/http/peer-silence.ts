import { STALL_MS } from "../timing/stall.js";

export interface KeepaliveSettings {
  /** How often the server pings the peer. */
  pingIntervalMs: number;
  /** A peer that has not ponged for this long is terminated (its `close` handlers then run as usual). */
  pongTimeoutMs: number;
}

export type KeepaliveVerdict = { kind: "ping" } | { kind: "dead"; silentForMs: number };

/**
 * How long one peer has been silent, counted only over time this process observed: a tick that comes a stall late
 * restarts the count (the peer gets a fresh ping and a whole timeout to answer it) instead of judging the peer by
 * the process's own pause. Times are monotonic milliseconds.
 */
export class PeerSilence {
  private heardAt: number;
  private tickedAt: number;

  constructor(
    private readonly settings: KeepaliveSettings,
    now: number,
  ) {
    this.heardAt = now;
    this.tickedAt = now;
  }

  pong(now: number): void {
    this.heardAt = now;
  }

  /**
   * Called every `pingIntervalMs`: ping the peer again, or give it up. `reading` is false while this process does not
   * read the socket (backpressure): a pong cannot be heard then, so the count restarts too.
   */
  tick(now: number, reading = true): KeepaliveVerdict {
    const lateMs = now - this.tickedAt - this.settings.pingIntervalMs;
    this.tickedAt = now;
    if (lateMs >= STALL_MS || !reading) this.heardAt = now;
    const silentForMs = now - this.heardAt;
    return silentForMs >= this.settings.pongTimeoutMs ? { kind: "dead", silentForMs } : { kind: "ping" };
  }
}
