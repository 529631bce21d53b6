import type { Redis } from "ioredis";
import { decodeJwt } from "jose";
import {
  AuthError,
  bearerToken,
  issuedBeforeRevocation,
  verifyToken,
  type Principal,
} from "../../../libs/auth/tokens.js";
import type { Keyspace } from "../../../libs/redis/keyspace.js";
import { HarnessDeviceKeys } from "../store/harness-keys.js";

export interface AuthenticatedPeer extends Principal {
  tokenIssuedAt: number;
}

export type AuthFailure = { code: "UNAUTHORIZED" | "REVOKED"; message: string };

/**
 * Checks `Authorization: Bearer <JWT>` (HS256 signature, expiry, claims) and refuses tokens issued no later than
 * the device's last revocation (iat has second resolution, so a token from the revocation's second is refused too).
 */
export async function authenticatePeer(
  redis: Redis,
  keys: Keyspace,
  secret: string,
  authorization: string | undefined,
): Promise<AuthenticatedPeer | AuthFailure> {
  const token = bearerToken(authorization);
  if (!token) return { code: "UNAUTHORIZED", message: "missing bearer token" };
  let principal: Principal;
  try {
    principal = await verifyToken(secret, token);
  } catch (error) {
    return { code: "UNAUTHORIZED", message: error instanceof AuthError ? error.message : "invalid token" };
  }
  const issuedAtSeconds = decodeJwt(token).iat ?? 0;
  const revokedAt = await redis.get(new HarnessDeviceKeys(keys, principal.deviceId).revokedAt);
  if (issuedBeforeRevocation(issuedAtSeconds, revokedAt === null ? undefined : Number(revokedAt)))
    return { code: "REVOKED", message: "token issued before the device was revoked" };
  return { ...principal, tokenIssuedAt: issuedAtSeconds };
}
