import { decodeJwt } from "jose";
import type { WebSocket } from "ws";
import { z } from "zod";
import { bearerToken } from "../auth/tokens.js";

/** Close code for a socket whose credential's `exp` has passed (4001 is "revoked"). */
export const TOKEN_EXPIRED_CLOSE_CODE = 4002;

/** setTimeout fires at once for delays above 2^31-1 ms (about 24.8 days); longer waits are taken in steps. */
const LONGEST_TIMER_MS = 2 ** 31 - 1;

const expirySchema = z.object({ exp: z.number() });

/** The `exp` of a bearer credential as epoch ms; a credential without a bearer token counts as expired. */
export function bearerExpiresAtMs(authorization: string | undefined): number {
  const token = bearerToken(authorization);
  return token === undefined ? Date.now() : expirySchema.parse(decodeJwt(token)).exp * 1000;
}

/** Calls `expired` once `expiresAtMs` has passed; the answer cancels the wait. */
export function atExpiry(expiresAtMs: number, expired: () => void): () => void {
  let timer: NodeJS.Timeout | undefined;
  const wait = () => {
    const remainingMs = expiresAtMs - Date.now();
    if (remainingMs <= 0) return expired();
    timer = setTimeout(wait, Math.min(remainingMs, LONGEST_TIMER_MS));
    timer.unref();
  };
  wait();
  return () => clearTimeout(timer);
}

/**
 * Closes the socket with 4002 "token expired" when the `exp` of the bearer token it was upgraded with passes: a
 * credential is only good for its lifetime, an open socket included. The token was verified before the upgrade.
 */
export function closeAtTokenExpiry(socket: WebSocket, authorization: string | undefined): void {
  const cancel = atExpiry(bearerExpiresAtMs(authorization), () =>
    socket.close(TOKEN_EXPIRED_CLOSE_CODE, "token expired"),
  );
  socket.once("close", cancel);
}
