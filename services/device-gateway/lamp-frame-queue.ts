import type { RawData, WebSocket } from "ws";

/**
 * One Lamp socket's frames, handled one at a time in the order they arrived. While more than `maxQueued` wait, the
 * socket is not read (paused: TCP then pushes back on the Lamp), and reading starts again once half of them were
 * handled: a flood costs the gateway a bounded queue, and every frame read is still handled. Frames already taken off
 * the wire when the pause begins are queued too, so the bound is approximate by one read's worth.
 */
export class LampFrameQueue {
  private chain: Promise<void> = Promise.resolve();
  private queued = 0;

  constructor(
    private readonly socket: WebSocket,
    private readonly maxQueued: number,
    /** Must not reject: a rejected step would wedge the chain. */
    private readonly handle: (data: RawData) => Promise<void>,
  ) {}

  push(data: RawData): void {
    this.queued += 1;
    if (this.queued > this.maxQueued && !this.socket.isPaused) this.socket.pause();
    this.chain = this.chain.then(() => this.handle(data)).finally(() => this.handled());
  }

  private handled(): void {
    this.queued -= 1;
    if (this.socket.isPaused && this.queued <= Math.floor(this.maxQueued / 2)) this.socket.resume();
  }
}
