import type { RedisClient } from "../../../libs/redis/redis-client.js";
import { authenticateBearer } from "../../../libs/auth/bearer-auth.js";
import type { Principal } from "../../../libs/auth/tokens.js";
import type { Keyspace } from "../../../libs/redis/keyspace.js";
import { HarnessDeviceKeys } from "../../../libs/harness-store/harness-keys.js";

export interface AuthenticatedPeer extends Principal {
  tokenIssuedAt: number;
}

export type AuthFailure = { code: "UNAUTHORIZED" | "REVOKED"; message: string };

/**
 * A Harness peer's credential: aud `harness`, role `os` (the OS acting for the device in `sub`), signed with
 * HARNESS_JWT_SECRET, and checked against the Harness's own revocation record (`B:revoked-at`). Lamp and OS-API
 * tokens (aud `os`) and operator tokens never open a peer session.
 */
export async function authenticatePeer(
  redis: RedisClient,
  keys: Keyspace,
  surface: { secret: string; maxLifetimeSeconds: number },
  authorization: string | undefined,
): Promise<AuthenticatedPeer | AuthFailure> {
  const authentication = await authenticateBearer(
    { audience: "harness", ...surface },
    authorization,
    async (deviceId) => {
      const revokedAt = await redis.get(new HarnessDeviceKeys(keys, deviceId).revokedAt);
      return revokedAt === null ? undefined : Number(revokedAt);
    },
  );
  if (!authentication.ok) return { code: authentication.code, message: authentication.message };
  if (authentication.principal.role !== "os")
    return { code: "UNAUTHORIZED", message: `role "${authentication.principal.role}" is not a Harness peer` };
  return { ...authentication.principal, tokenIssuedAt: authentication.issuedAt };
}
