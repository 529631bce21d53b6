import type { FastifyRequest } from "fastify";
import { authenticateBearer, type BearerAuthentication, type TokenSurface } from "../auth/bearer-auth.js";
import type { OperatorGate } from "../http/operator-gate.js";
import type { Keyspace } from "../redis/keyspace.js";
import type { RedisClient } from "../redis/redis-client.js";
import { lampRevokedAt } from "./lamp-revocations.js";

/**
 * The caller of an OS request (the Lamp socket, the OS API, the console), from its Bearer JWT only (aud `os`,
 * AUTH_JWT_SECRET), checked against the OS's revocation record. Harness tokens (aud `harness`) are refused here
 * whatever the secrets.
 */
export class OsAuthenticator {
  private readonly surface: TokenSurface;

  constructor(
    private readonly redis: RedisClient,
    private readonly keys: Keyspace,
    secret: string,
    maxLifetimeSeconds: number,
  ) {
    this.surface = { audience: "os", secret, maxLifetimeSeconds };
  }

  authenticate(request: FastifyRequest): Promise<BearerAuthentication> {
    return this.authenticateAuthorization(request.headers.authorization);
  }

  /** The same check for a credential that arrived another way (the console's session cookie). */
  authenticateAuthorization(authorization: string | undefined): Promise<BearerAuthentication> {
    return authenticateBearer(this.surface, authorization, (deviceId) =>
      lampRevokedAt(this.redis, this.keys, deviceId),
    );
  }
}

/**
 * OS operators (aud `os`, role `operator`, checked against revocations like every OS token), by the credential
 * `authorizationOf` reads (the `Authorization` header unless told otherwise): 401 without a valid OS token, 403
 * FORBIDDEN for a device token.
 */
export function osOperatorGate(
  auth: OsAuthenticator,
  authorizationOf: (request: FastifyRequest) => string | undefined = (request) =>
    request.headers.authorization,
): OperatorGate {
  return async (request) => {
    const authentication = await auth.authenticateAuthorization(authorizationOf(request));
    if (!authentication.ok)
      return { admitted: false, status: 401, code: authentication.code, message: authentication.message };
    if (authentication.principal.role !== "operator")
      return { admitted: false, status: 403, code: "FORBIDDEN", message: "operator role required" };
    return { admitted: true, operator: authentication.principal.deviceId };
  };
}
