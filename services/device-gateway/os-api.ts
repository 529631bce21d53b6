import type { FastifyInstance, FastifyReply, FastifyRequest } from "fastify";
import { z } from "zod";
import { deviceIdSchema } from "../../libs/auth/tokens.js";
import { opaqueIdSchema } from "../../libs/contract/identifiers.js";
import type { OsQueries } from "../../libs/os-store/os-queries.js";
import { runStateSchema, runView } from "../../libs/os-store/run-record.js";
import type { OsAuthenticator } from "../../libs/os-store/os-authenticator.js";
import { BEARER, errorResponses } from "../../libs/http/api-docs.js";
import {
  heldResultListSchema,
  protocolErrorListSchema,
  rejectionListSchema,
  resultViewSchema,
  runListSchema,
  runViewSchema,
} from "./os-api-schemas.js";

const deviceQuerySchema = z.object({ deviceId: deviceIdSchema.optional() });
const runsQuerySchema = deviceQuerySchema.extend({ state: runStateSchema.optional() });
const heldResultsQuerySchema = deviceQuerySchema.extend({ state: z.enum(["held", "expired"]).optional() });
const runParamsSchema = z.object({ runId: opaqueIdSchema });
const resultParamsSchema = z.object({ resultId: opaqueIdSchema });

/** The refusals every OS API route shares (deviceFor). */
const deviceRefusals = {
  400: "bad input, or an operator without ?deviceId=",
  401: "no valid OS token (REVOKED for a revoked device's older token)",
  403: "a device naming another device",
};

/** A route's OpenAPI description: the schemas its handler checks with and the answers it gives. */
function described(summary: string, parts: { params?: z.ZodType; querystring: z.ZodType; ok: z.ZodType }) {
  const { ok, ...input } = parts;
  return {
    schema: {
      summary,
      tags: ["os-api"],
      security: BEARER,
      ...input,
      response: {
        200: ok,
        ...(parts.params
          ? errorResponses({ ...deviceRefusals, 404: "no such record" })
          : errorResponses(deviceRefusals)),
      },
    },
  };
}

const fail = (reply: FastifyReply, status: number, code: string, message: string) =>
  reply.code(status).send({ error: { code, message } });

/**
 * The OS query API (docs/wire-protocol.md), same JWT as the Lamp: a device sees only its own records; an operator names the
 * device with `?deviceId=`. Unknown ids are 404 and bad input 400, always with a JSON error.
 */
export function registerOsApi(http: FastifyInstance, queries: OsQueries, auth: OsAuthenticator): void {
  /** The device whose records the caller may read, or undefined after an error reply was sent. */
  async function deviceFor(request: FastifyRequest, reply: FastifyReply): Promise<string | undefined> {
    const authentication = await auth.authenticate(request);
    if (!authentication.ok) {
      await fail(reply, 401, authentication.code, authentication.message);
      return undefined;
    }
    const { principal } = authentication;
    const query = deviceQuerySchema.safeParse(request.query);
    if (!query.success) {
      await fail(reply, 400, "INVALID_REQUEST", "deviceId is not a device id");
      return undefined;
    }
    const asked = query.data.deviceId;
    if (principal.role === "operator") {
      if (asked) return asked;
      await fail(reply, 400, "INVALID_REQUEST", "operators must name the device with ?deviceId=");
      return undefined;
    }
    if (asked && asked !== principal.deviceId) {
      await fail(reply, 403, "FORBIDDEN", "a device reads only its own records");
      return undefined;
    }
    return principal.deviceId;
  }

  http.get(
    "/v1/runs/:runId",
    described("One run of the device", {
      params: runParamsSchema,
      querystring: deviceQuerySchema,
      ok: runViewSchema,
    }),
    async (request, reply) => {
      const deviceId = await deviceFor(request, reply);
      if (!deviceId) return reply;
      const params = runParamsSchema.safeParse(request.params);
      if (!params.success) return fail(reply, 400, "INVALID_REQUEST", "runId is not an id");
      const run = await queries.run(deviceId, params.data.runId);
      return run ? runView(run) : fail(reply, 404, "NOT_FOUND", "no such run");
    },
  );

  http.get(
    "/v1/runs",
    described("The device's runs, newest first (at most 200)", {
      querystring: runsQuerySchema,
      ok: runListSchema,
    }),
    async (request, reply) => {
      const deviceId = await deviceFor(request, reply);
      if (!deviceId) return reply;
      const query = runsQuerySchema.safeParse(request.query);
      if (!query.success)
        return fail(reply, 400, "INVALID_REQUEST", "state must be pending, resolved or unknown");
      const runs = await queries.runs(deviceId, query.data.state);
      return { deviceId, runs: runs.map(runView) };
    },
  );

  http.get(
    "/v1/results/:resultId",
    described("One stored result with its members and playback", {
      params: resultParamsSchema,
      querystring: deviceQuerySchema,
      ok: resultViewSchema,
    }),
    async (request, reply) => {
      const deviceId = await deviceFor(request, reply);
      if (!deviceId) return reply;
      const params = resultParamsSchema.safeParse(request.params);
      if (!params.success) return fail(reply, 400, "INVALID_REQUEST", "resultId is not an id");
      const result = await queries.result(deviceId, params.data.resultId);
      return result ?? fail(reply, 404, "NOT_FOUND", "no such result");
    },
  );

  http.get(
    "/v1/held-results",
    described("Results held until their receipts bind (or given up: state=expired)", {
      querystring: heldResultsQuerySchema,
      ok: heldResultListSchema,
    }),
    async (request, reply) => {
      const deviceId = await deviceFor(request, reply);
      if (!deviceId) return reply;
      const query = heldResultsQuerySchema.safeParse(request.query);
      if (!query.success) return fail(reply, 400, "INVALID_REQUEST", "state must be held or expired");
      const heldResults =
        query.data.state === "expired"
          ? await queries.expiredHeldResults(deviceId)
          : await queries.heldResults(deviceId);
      return { deviceId, heldResults };
    },
  );

  http.get(
    "/v1/rejections",
    described("Harness events rejected whole, with the reason", {
      querystring: deviceQuerySchema,
      ok: rejectionListSchema,
    }),
    async (request, reply) => {
      const deviceId = await deviceFor(request, reply);
      if (!deviceId) return reply;
      return { deviceId, rejections: await queries.rejections(deviceId) };
    },
  );

  http.get(
    "/v1/protocol-errors",
    described("Same resultId with different content or membership", {
      querystring: deviceQuerySchema,
      ok: protocolErrorListSchema,
    }),
    async (request, reply) => {
      const deviceId = await deviceFor(request, reply);
      if (!deviceId) return reply;
      return { deviceId, protocolErrors: await queries.protocolErrors(deviceId) };
    },
  );
}
