import type { FastifyInstance } from "fastify";
import type { RedisClient } from "../../../libs/redis/redis-client.js";
import { z } from "zod";
import { deviceIdSchema } from "../../../libs/auth/tokens.js";
import { BEARER, errorResponses } from "../../../libs/http/api-docs.js";
import type { OperatorGate } from "../../../libs/http/operator-gate.js";
import type { Keyspace } from "../../../libs/redis/keyspace.js";
import { revokeDevice } from "./device-revocation.js";

const revokeDeviceSchema = {
  summary:
    "Revoke a device on the Harness: its receipts, results and event log are deleted (Harness operators)",
  tags: ["admin"],
  security: BEARER,
  params: z.object({ deviceId: deviceIdSchema }),
  response: {
    200: z.object({
      deviceId: z.string(),
      reservations: z.number().int(),
      results: z.number().int(),
      events: z.number().int(),
    }),
    ...errorResponses({
      400: "malformed deviceId",
      401: "no valid Harness token",
      403: "the token is not an operator's",
    }),
  },
};

/**
 * `DELETE /v1/admin/devices/:deviceId`: operators only (aud `harness`, role `operator`, HARNESS_JWT_SECRET); 401
 * without a valid Harness token, 403 FORBIDDEN for an OS peer token.
 */
export function registerAdminRoutes(
  http: FastifyInstance,
  redis: RedisClient,
  keys: Keyspace,
  operators: OperatorGate,
): void {
  http.delete<{ Params: { deviceId: string } }>(
    "/v1/admin/devices/:deviceId",
    { schema: revokeDeviceSchema },
    async (request, reply) => {
      const verdict = await operators(request);
      if (!verdict.admitted)
        return reply.code(verdict.status).send({ error: { code: verdict.code, message: verdict.message } });
      const deviceId = deviceIdSchema.safeParse(request.params.deviceId);
      if (!deviceId.success)
        return reply.code(400).send({ error: { code: "INVALID_REQUEST", message: "malformed deviceId" } });
      return reply.code(200).send(await revokeDevice(redis, keys, deviceId.data));
    },
  );
}
