import type { Redis } from "ioredis";
import { authenticateBearer } from "../../../libs/auth/bearer-auth.js";
import type { Principal } from "../../../libs/auth/tokens.js";
import type { Keyspace } from "../../../libs/redis/keyspace.js";
import { HarnessDeviceKeys } from "../../../libs/harness-store/harness-keys.js";

export interface AuthenticatedPeer extends Principal {
  tokenIssuedAt: number;
}

export type AuthFailure = { code: "UNAUTHORIZED" | "REVOKED"; message: string };

/** A Harness peer's credential, checked against the Harness's own revocation record (`B:revoked-at`). */
export async function authenticatePeer(
  redis: Redis,
  keys: Keyspace,
  secret: string,
  authorization: string | undefined,
): Promise<AuthenticatedPeer | AuthFailure> {
  const authentication = await authenticateBearer(secret, authorization, async (deviceId) => {
    const revokedAt = await redis.get(new HarnessDeviceKeys(keys, deviceId).revokedAt);
    return revokedAt === null ? undefined : Number(revokedAt);
  });
  if (!authentication.ok) return { code: authentication.code, message: authentication.message };
  return { ...authentication.principal, tokenIssuedAt: authentication.issuedAt };
}
