import { Redis } from "ioredis";

type SendCommand = Redis["sendCommand"];

/**
 * A single-server connection whose commands issued in one turn of the event loop leave in one socket write.
 *
 * ioredis writes every command to the socket at once: one system call per command here, and one read for Redis.
 * This connection corks its socket at the first command of a turn and uncorks it in the turn's check phase
 * (setImmediate), so the commands the turn's callbacks issued go out as one writev. Each command still resolves
 * on its own reply, in order, so nothing waits for a batch to come back (ioredis's auto-pipelining does, and added
 * latency: docs/decisions.md). A pipeline, already one write, joins the turn's write when one is open; the handshake
 * before `ready` is written at once. A socket closed while corked drops its bytes as a socket closed with unsent bytes
 * would, and ioredis treats the commands it had written the same way (rejected, or resent by a blocking connection).
 */
export class WriteCoalescingRedis extends Redis {
  private corked = false;

  override sendCommand(...args: Parameters<SendCommand>): ReturnType<SendCommand> {
    const [, stream] = args;
    if (stream === undefined && !this.corked && this.status === "ready") this.corkUntilCheckPhase();
    return super.sendCommand(...args);
  }

  private corkUntilCheckPhase(): void {
    const socket = this.stream;
    this.corked = true;
    socket.cork();
    setImmediate(() => {
      this.corked = false;
      socket.uncork();
    });
  }
}
