import { decodeJwt } from "jose";
import {
  AuthError,
  bearerToken,
  issuedBeforeRevocation,
  verifyToken,
  type Audience,
  type Principal,
} from "./tokens.js";

export type BearerAuthentication =
  | { ok: true; principal: Principal; issuedAt: number }
  | { ok: false; code: "UNAUTHORIZED" | "REVOKED"; message: string };

/** What a surface verifies its tokens with: its own audience, the secret that signs it and the longest lifetime. */
export interface TokenSurface {
  audience: Audience;
  secret: string;
  maxLifetimeSeconds: number;
}

/**
 * Checks `Authorization: Bearer <JWT>` (audience, HS256 signature, expiry, claims) and refuses a token issued no
 * later than its device's last revocation, as each side records it (`revokedAt`, epoch ms). Both gateways
 * authenticate this way.
 */
export async function authenticateBearer(
  surface: TokenSurface,
  authorization: string | undefined,
  revokedAt: (deviceId: string) => Promise<number | undefined>,
): Promise<BearerAuthentication> {
  const token = bearerToken(authorization);
  if (!token) return { ok: false, code: "UNAUTHORIZED", message: "missing bearer token" };
  let principal: Principal;
  try {
    principal = await verifyToken(surface.secret, token, surface.audience, surface.maxLifetimeSeconds);
  } catch (error) {
    const message = error instanceof AuthError ? error.message : "invalid token";
    return { ok: false, code: "UNAUTHORIZED", message };
  }
  const issuedAt = decodeJwt(token).iat ?? 0;
  if (issuedBeforeRevocation(issuedAt, await revokedAt(principal.deviceId)))
    return { ok: false, code: "REVOKED", message: "token issued before the device was revoked" };
  return { ok: true, principal, issuedAt };
}
