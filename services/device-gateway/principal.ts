import type { FastifyRequest } from "fastify";
import type { Redis } from "ioredis";
import { decodeJwt } from "jose";
import { bearerToken, issuedBeforeRevocation, verifyToken, type Principal } from "../../libs/auth/tokens.js";
import type { Keyspace } from "../../libs/redis/keyspace.js";
import { lampRevokedAt } from "./lamp-revocation.js";

export type Authentication =
  | { ok: true; principal: Principal; issuedAt: number }
  | { ok: false; code: "UNAUTHORIZED" | "REVOKED"; message: string };

/**
 * The caller of a Lamp or API request, from its Bearer JWT only: signature, expiry and claims checked, and a token
 * issued no later than the device's last revocation refused as `REVOKED`.
 */
export class LampAuthenticator {
  constructor(
    private readonly redis: Redis,
    private readonly keys: Keyspace,
    private readonly secret: string,
  ) {}

  async authenticate(request: FastifyRequest): Promise<Authentication> {
    const token = bearerToken(request.headers.authorization);
    const refused = { ok: false, code: "UNAUTHORIZED", message: "a valid Bearer token is required" } as const;
    if (!token) return refused;
    let principal: Principal;
    try {
      principal = await verifyToken(this.secret, token);
    } catch {
      return refused;
    }
    const issuedAt = decodeJwt(token).iat ?? 0;
    const revokedAt = await lampRevokedAt(this.redis, this.keys, principal.deviceId);
    if (issuedBeforeRevocation(issuedAt, revokedAt))
      return { ok: false, code: "REVOKED", message: "token issued before the device was revoked" };
    return { ok: true, principal, issuedAt };
  }
}
