import type { FastifyInstance } from "fastify";
import type { Redis } from "ioredis";
import { AuthError, bearerToken, deviceIdSchema, verifyToken } from "../../../libs/auth/tokens.js";
import type { Keyspace } from "../../../libs/redis/keyspace.js";
import { revokeDevice } from "./device-revocation.js";

/**
 * `DELETE /v1/admin/devices/:deviceId`: operators only (aud `harness`, role `operator`, HARNESS_JWT_SECRET); 401
 * without a valid Harness token, 403 FORBIDDEN for an OS peer token.
 */
export function registerAdminRoutes(
  http: FastifyInstance,
  redis: Redis,
  keys: Keyspace,
  secret: string,
): void {
  http.delete<{ Params: { deviceId: string } }>("/v1/admin/devices/:deviceId", async (request, reply) => {
    const token = bearerToken(request.headers.authorization);
    if (!token)
      return reply.code(401).send({ error: { code: "UNAUTHORIZED", message: "missing bearer token" } });
    try {
      const principal = await verifyToken(secret, token, "harness");
      if (principal.role !== "operator")
        return reply.code(403).send({ error: { code: "FORBIDDEN", message: "operator role required" } });
    } catch (error) {
      const message = error instanceof AuthError ? error.message : "invalid token";
      return reply.code(401).send({ error: { code: "UNAUTHORIZED", message } });
    }
    const deviceId = deviceIdSchema.safeParse(request.params.deviceId);
    if (!deviceId.success)
      return reply.code(400).send({ error: { code: "INVALID_REQUEST", message: "malformed deviceId" } });
    return reply.code(200).send(await revokeDevice(redis, keys, deviceId.data));
  });
}
