import websocket from "@fastify/websocket";
import { STATUS_CODES } from "node:http";
import type { Socket } from "node:net";
import Fastify, {
  LogController,
  type FastifyBaseLogger,
  type FastifyInstance,
  type FastifyReply,
  type FastifyRequest,
} from "fastify";
import { z } from "zod";
import type { Registry } from "prom-client";
import type { Logger } from "../logging/logger.js";
import { describeRoutes, textResponse } from "./api-docs.js";
import type { HealthRegistry } from "./health.js";
import { redisUnavailableAnswer } from "./redis-unavailable.js";
import { SECURITY_HEADERS } from "./security-headers.js";

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
      reply.code(400).send(errorBody(400, error.message)),
    clientErrorHandler: answerClientError,
  });
  await server.register(websocket, { options: { maxPayload: 64 * 1024 } });
  // Last word on every answer, so a plugin's own caching or framing headers (static files) cannot loosen them.
  server.addHook("onSend", async (_request, reply, payload) => {
    reply.headers(SECURITY_HEADERS);
    return payload;
  });
  await describeRoutes(server);
  // Every error answer has the one shape the APIs document, `{error: {code, message}}`, including Fastify's own.
  server.setNotFoundHandler((request, reply) =>
    reply.code(404).send(errorBody(404, `no route ${request.method} ${request.url}`)),
  );
  server.setErrorHandler((error: { statusCode?: number; message?: string }, _request, reply) => {
    const unavailable = redisUnavailableAnswer(error);
    if (unavailable) return reply.code(503).header("retry-after", "1").send(unavailable);
    const status = error.statusCode !== undefined && error.statusCode >= 400 ? error.statusCode : 500;
    if (status >= 500) options.log.error({ err: error.message }, "request failed");
    return reply
      .code(status)
      .send(errorBody(status, status >= 500 ? "internal error" : (error.message ?? "")));
  });
  server.get(
    "/healthz",
    { schema: probeSchema("Liveness: the event loop turns and every loop is alive") },
    async (_request, reply) => {
      const report = options.health.live();
      return reply.code(report.ok ? 200 : 503).send(report);
    },
  );
  server.get(
    "/readyz",
    { schema: probeSchema("Readiness: Redis answers, groups exist, agents run") },
    async (_request, reply) => {
      const report = await options.health.ready();
      return reply.code(report.ok ? 200 : 503).send(report);
    },
  );
  const metricsSchema = {
    summary: "Prometheus metrics of this process",
    tags: ["probes"],
    response: { 200: textResponse("text/plain", "Prometheus text exposition format") },
  };
  server.get("/metrics", { schema: metricsSchema }, async (_request, reply) => {
    return reply.header("content-type", options.metrics.contentType).send(await options.metrics.metrics());
  });
  return server;
}

const probeReportSchema = z.object({ ok: z.boolean(), checks: z.record(z.string(), z.boolean()) });

function probeSchema(summary: string) {
  return {
    summary,
    tags: ["probes"],
    response: {
      200: probeReportSchema.describe("every check passed"),
      503: probeReportSchema.describe("some check failed"),
    },
  };
}

/** The code of an error answer by its HTTP status; a 4xx without its own code is INVALID_REQUEST. */
const CODE_BY_STATUS: Record<number, string> = {
  401: "UNAUTHORIZED",
  403: "FORBIDDEN",
  404: "NOT_FOUND",
  405: "METHOD_NOT_ALLOWED",
  408: "REQUEST_TIMEOUT",
  413: "PAYLOAD_TOO_LARGE",
  414: "URI_TOO_LONG",
  415: "UNSUPPORTED_MEDIA_TYPE",
  429: "RATE_LIMITED",
  431: "HEADERS_TOO_LARGE",
};

export function errorCodeOf(status: number): string {
  if (status >= 500) return "INTERNAL";
  return CODE_BY_STATUS[status] ?? "INVALID_REQUEST";
}

function errorBody(status: number, message: string) {
  return { error: { code: errorCodeOf(status), message } };
}

/** Node's HTTP parser errors are not requests yet, so Fastify's handlers never see them; its default body has another shape. */
const CLIENT_ERRORS: Record<string, { status: number; message: string }> = {
  HPE_HEADER_OVERFLOW: { status: 431, message: "request headers exceed the server's limit" },
  ERR_HTTP_REQUEST_TIMEOUT: { status: 408, message: "request not completed in time" },
};

function answerClientError(error: Error & { code?: string }, socket: Socket): void {
  // A reset connection has nobody left to answer.
  if (error.code === "ECONNRESET" || socket.destroyed) return;
  const { status, message } = CLIENT_ERRORS[error.code ?? ""] ?? {
    status: 400,
    message: "malformed HTTP request",
  };
  const body = JSON.stringify(errorBody(status, message));
  if (socket.writable)
    socket.write(
      `HTTP/1.1 ${status} ${STATUS_CODES[status] ?? ""}\r\nConnection: close\r\nContent-Length: ${Buffer.byteLength(body)}\r\n` +
        `Content-Type: application/json; charset=utf-8\r\n\r\n${body}`,
    );
  socket.destroy(error);
}
