import swagger from "@fastify/swagger";
import swaggerUi from "@fastify/swagger-ui";
import type { FastifyInstance } from "fastify";
import { createJsonSchemaTransform, jsonSchemaTransformObject } from "fastify-type-provider-zod";
import { z } from "zod";
import { anyOperatorGate, refuseNonOperators, type OperatorGate } from "./operator-gate.js";

export const OPENAPI_PATH = "/openapi.json";
export const DOCS_PREFIX = "/docs";

/** Every error answer of every route (libs/http/service-server.ts). */
export const apiErrorSchema = z.object({
  error: z.object({ code: z.string(), message: z.string() }),
});

/** The error answers a route documents, each with the sentence that says when it happens. */
export function errorResponses<S extends 400 | 401 | 403 | 404 | 503>(
  cases: Record<S, string>,
): Record<S, typeof apiErrorSchema> {
  const entries = Object.entries<string>(cases).map(([status, when]) => [
    status,
    apiErrorSchema.describe(when),
  ]);
  return Object.fromEntries(entries) as Record<S, typeof apiErrorSchema>;
}

/** A response that is not JSON (HTML, Prometheus text, JavaScript), documented by its media type. */
export function textResponse(mediaType: string, description: string) {
  return { description, content: { [mediaType]: { schema: z.string() } } };
}

/** The `security` of a route that takes `Authorization: Bearer <JWT>`. */
export const BEARER = [{ bearer: [] }];

/**
 * Collects every route of the server into an OpenAPI 3.1 document built from the zod schemas on the routes. Route
 * schemas describe; they do not validate: each handler checks its own input after the credential, in the order and
 * with the messages docs/wire-protocol.md states, so describing a route changes none of its answers.
 */
export async function describeRoutes(server: FastifyInstance): Promise<void> {
  server.setValidatorCompiler(() => (value) => ({ value }));
  server.setSerializerCompiler(() => (data) => JSON.stringify(data));
  await server.register(swagger, {
    openapi: {
      openapi: "3.1.0",
      info: {
        title: "Lampline",
        version: "1",
        description:
          "The HTTP routes of this process: the OS and Harness APIs, the WebSocket upgrades, the operator console and the probes.",
      },
      components: { securitySchemes: { bearer: { type: "http", scheme: "bearer", bearerFormat: "JWT" } } },
    },
    transform: showWebSocketRoutes(createJsonSchemaTransform({ skipList: [] })),
    transformObject: jsonSchemaTransformObject,
  });
}

type SchemaTransform = ReturnType<typeof createJsonSchemaTransform>;

/** @fastify/websocket marks every WebSocket route hidden; ours are described like any route, so they are shown. */
function showWebSocketRoutes(transform: SchemaTransform): SchemaTransform {
  return (input) => {
    if (!("websocket" in input.route) || input.route.websocket !== true || !input.schema)
      return transform(input);
    const { hide: _hidden, ...schema } = input.schema as Record<string, unknown>;
    return transform({ ...input, schema });
  };
}

const operatorGates = new WeakMap<FastifyInstance, OperatorGate[]>();

/**
 * Serves the document at /openapi.json and its browsable docs at /docs to operators. Each operator-facing service
 * adds its gate; in the all-in-one process both gateways share one server, so an operator of either surface is let in.
 */
export async function serveApiDocs(server: FastifyInstance, gate: OperatorGate): Promise<void> {
  const gates = operatorGates.get(server);
  if (gates) {
    gates.push(gate);
    return;
  }
  const admitted: OperatorGate[] = [gate];
  operatorGates.set(server, admitted);
  await server.register(async (docs) => {
    docs.addHook("onRequest", refuseNonOperators(anyOperatorGate(admitted)));
    docs.get(
      OPENAPI_PATH,
      {
        schema: {
          summary: "This OpenAPI document (operators only)",
          tags: ["docs"],
          security: BEARER,
          response: {
            200: z.looseObject({ openapi: z.string(), paths: z.record(z.string(), z.unknown()) }),
            ...errorResponses({
              401: "no valid token of this surface",
              403: "the token is not an operator's",
            }),
          },
        },
      },
      async () => server.swagger(),
    );
    await docs.register(swaggerUi, { routePrefix: DOCS_PREFIX });
  });
}
