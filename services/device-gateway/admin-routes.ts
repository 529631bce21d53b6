import type { FastifyInstance } from "fastify";
import type { RedisClient } from "../../libs/redis/redis-client.js";
import { deviceIdSchema } from "../../libs/auth/tokens.js";
import type { Keyspace } from "../../libs/redis/keyspace.js";
import { revokeLamp } from "./lamp-revocation.js";
import type { OsAuthenticator } from "../../libs/os-store/os-authenticator.js";
import { z } from "zod";
import { BEARER, errorResponses } from "../../libs/http/api-docs.js";
import { revokedLampSchema } from "./os-api-schemas.js";

const revokeLampSchema = {
  summary: "Revoke a device's Lamp credentials (OS operators)",
  tags: ["admin"],
  security: BEARER,
  params: z.object({ deviceId: deviceIdSchema }),
  response: {
    200: revokedLampSchema,
    ...errorResponses({
      400: "malformed deviceId",
      401: "no valid OS token",
      403: "the token is not an operator's",
    }),
  },
};

/** `DELETE /v1/lamp/devices/:deviceId`: operators revoke a device's Lamp credentials; 401/403/400 otherwise. */
export function registerLampAdminRoutes(
  http: FastifyInstance,
  redis: RedisClient,
  keys: Keyspace,
  auth: OsAuthenticator,
): void {
  http.delete<{ Params: { deviceId: string } }>(
    "/v1/lamp/devices/:deviceId",
    { schema: revokeLampSchema },
    async (request, reply) => {
      const authentication = await auth.authenticate(request);
      if (!authentication.ok)
        return reply
          .code(401)
          .send({ error: { code: authentication.code, message: authentication.message } });
      if (authentication.principal.role !== "operator")
        return reply.code(403).send({ error: { code: "FORBIDDEN", message: "operator role required" } });
      const deviceId = deviceIdSchema.safeParse(request.params.deviceId);
      if (!deviceId.success)
        return reply.code(400).send({ error: { code: "INVALID_REQUEST", message: "malformed deviceId" } });
      return revokeLamp(redis, keys, deviceId.data);
    },
  );
}
