import type { FastifyRequest } from "fastify";
import type { RedisClient } from "../../libs/redis/redis-client.js";
import { authenticateBearer, type BearerAuthentication } from "../../libs/auth/bearer-auth.js";
import type { Keyspace } from "../../libs/redis/keyspace.js";
import { lampRevokedAt } from "./lamp-revocation.js";

/**
 * The caller of a Lamp or API request, from its Bearer JWT only (aud `os`, AUTH_JWT_SECRET), checked against the OS's
 * Lamp revocation record. Harness tokens (aud `harness`) are refused here whatever the secrets.
 */
export class LampAuthenticator {
  constructor(
    private readonly redis: RedisClient,
    private readonly keys: Keyspace,
    private readonly secret: string,
  ) {}

  authenticate(request: FastifyRequest): Promise<BearerAuthentication> {
    return this.authenticateAuthorization(request.headers.authorization);
  }

  /** The same check for a credential that arrived another way (the console's session cookie). */
  authenticateAuthorization(authorization: string | undefined): Promise<BearerAuthentication> {
    return authenticateBearer({ audience: "os", secret: this.secret }, authorization, (deviceId) =>
      lampRevokedAt(this.redis, this.keys, deviceId),
    );
  }
}
