import { performance } from "node:perf_hooks";
import type { WebSocket } from "ws";
import { envInt } from "../config/env-fields.js";
import { PeerSilence, type KeepaliveSettings } from "./peer-silence.js";

/** Both WebSocket servers' keepalive settings: by default a half-open peer is dropped within 30 s. */
export const keepaliveEnvFields = {
  WS_PING_INTERVAL_MS: envInt(10_000, 50, 600_000),
  WS_PONG_TIMEOUT_MS: envInt(20_000, 100, 3_600_000),
};

/**
 * Pings the peer every `pingIntervalMs` and terminates it once no pong has arrived for `pongTimeoutMs` of time this
 * process observed (PeerSilence): a half-open peer (gone without a FIN, or no longer reading) is noticed within
 * `pingIntervalMs + pongTimeoutMs`, while a pause of this process (SIGSTOP, a long GC) or of its reading the socket
 * (backpressure) drops nobody. Terminating emits `close` (1006), so the socket's own cleanup runs as for any other
 * close.
 */
export function keepSocketAlive(
  socket: WebSocket,
  settings: KeepaliveSettings,
  onDead: (silentForMs: number) => void,
): void {
  // Monotonic: a wall-clock step (NTP) is no more the peer's silence than a pause is.
  const silence = new PeerSilence(settings, performance.now());
  socket.on("pong", () => silence.pong(performance.now()));
  const pinger = setInterval(() => {
    const verdict = silence.tick(performance.now(), !socket.isPaused);
    if (verdict.kind === "dead") {
      clearInterval(pinger);
      onDead(verdict.silentForMs);
      socket.terminate();
      return;
    }
    if (socket.readyState === socket.OPEN) socket.ping();
  }, settings.pingIntervalMs);
  pinger.unref();
  socket.once("close", () => clearInterval(pinger));
}
