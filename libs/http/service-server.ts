import websocket from "@fastify/websocket";
import Fastify, { LogController, type FastifyBaseLogger, type FastifyInstance } from "fastify";
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
  });
  await server.register(websocket, { options: { maxPayload: 64 * 1024 } });
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
