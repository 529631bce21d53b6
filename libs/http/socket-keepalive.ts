import type { WebSocket } from "ws";
import { envInt } from "../config/env-fields.js";

/** Both WebSocket servers' keepalive settings: by default a half-open peer is dropped within 30 s. */
export const keepaliveEnvFields = {
  WS_PING_INTERVAL_MS: envInt(10_000, 50, 600_000),
  WS_PONG_TIMEOUT_MS: envInt(20_000, 100, 3_600_000),
};

export interface KeepaliveSettings {
  /** How often the server pings the peer. */
  pingIntervalMs: number;
  /** A peer that has not ponged for this long is terminated (its `close` handlers then run as usual). */
  pongTimeoutMs: number;
}

/**
 * Pings the peer every `pingIntervalMs` and terminates it once no pong has arrived for `pongTimeoutMs`: a half-open
 * peer (gone without a FIN, or no longer reading) is noticed within `pingIntervalMs + pongTimeoutMs`. Terminating
 * emits `close` (1006), so the socket's own cleanup runs as for any other close.
 */
export function keepSocketAlive(
  socket: WebSocket,
  settings: KeepaliveSettings,
  onDead: (silentForMs: number) => void,
): void {
  let pongAt = Date.now();
  socket.on("pong", () => (pongAt = Date.now()));
  const pinger = setInterval(() => {
    const silentForMs = Date.now() - pongAt;
    if (silentForMs >= settings.pongTimeoutMs) {
      clearInterval(pinger);
      onDead(silentForMs);
      socket.terminate();
      return;
    }
    if (socket.readyState === socket.OPEN) socket.ping();
  }, settings.pingIntervalMs);
  pinger.unref();
  socket.once("close", () => clearInterval(pinger));
}
