import websocket from "@fastify/websocket";
import Fastify, {
  LogController,
  type FastifyBaseLogger,
  type FastifyInstance,
  type FastifyReply,
  type FastifyRequest,
} from "fastify";
import type { Registry } from "prom-client";
import type { Logger } from "../logging/logger.js";
import type { HealthRegistry } from "./health.js";

/** The HTTP face every service has: /healthz, /readyz and /metrics, plus WebSocket support for the gateways. */
export async function createServiceServer(options: {
  log: Logger;
  metrics: Registry;
  health: HealthRegistry;
}): Promise<FastifyInstance> {
  const server: FastifyInstance = Fastify({
    loggerInstance: options.log as FastifyBaseLogger,
    logController: new LogController({ disableRequestLogging: true }),
    bodyLimit: 64 * 1024,
    frameworkErrors: (error: Error, _request: FastifyRequest, reply: FastifyReply) =>
      reply.code(400).send({ error: { code: "INVALID_REQUEST", message: error.message } }),
  });
  await server.register(websocket, { options: { maxPayload: 64 * 1024 } });
  // Every error answer has the one shape the APIs document, `{error: {code, message}}`, including Fastify's own.
  server.setNotFoundHandler((request, reply) =>
    reply
      .code(404)
      .send({ error: { code: "NOT_FOUND", message: `no route ${request.method} ${request.url}` } }),
  );
  server.setErrorHandler((error: { statusCode?: number; message?: string }, _request, reply) => {
    const status = error.statusCode !== undefined && error.statusCode >= 400 ? error.statusCode : 500;
    if (status >= 500) options.log.error({ err: error.message }, "request failed");
    const code = status >= 500 ? "INTERNAL" : status === 413 ? "PAYLOAD_TOO_LARGE" : "INVALID_REQUEST";
    return reply
      .code(status)
      .send({ error: { code, message: status >= 500 ? "internal error" : error.message } });
  });
  server.get("/healthz", async (_request, reply) => {
    const report = options.health.live();
    return reply.code(report.ok ? 200 : 503).send(report);
  });
  server.get("/readyz", async (_request, reply) => {
    const report = await options.health.ready();
    return reply.code(report.ok ? 200 : 503).send(report);
  });
  server.get("/metrics", async (_request, reply) => {
    return reply.header("content-type", options.metrics.contentType).send(await options.metrics.metrics());
  });
  return server;
}
