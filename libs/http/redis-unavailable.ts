import type { FastifyInstance } from "fastify";
import type { RedisConnections } from "../redis/connections.js";
import { isRedisUnavailableError } from "../redis/redis-errors.js";

/** Probes and metrics answer for themselves while Redis is down: /readyz says why, /healthz stays up. */
const PROBE_ROUTES = new Set(["/healthz", "/readyz", "/metrics"]);

export interface UnavailableAnswer {
  error: { code: "UNAVAILABLE"; message: string };
}

function unavailable(reason: string): UnavailableAnswer {
  return { error: { code: "UNAVAILABLE", message: `redis unavailable (${reason}); retry shortly` } };
}

/** While Redis is unreachable every other route answers 503 at once instead of waiting on a command that fails. */
export function answerUnavailableWhileRedisDown(
  server: FastifyInstance,
  connections: RedisConnections,
): void {
  server.addHook("onRequest", async (request, reply) => {
    if (connections.available || PROBE_ROUTES.has(request.url.split("?")[0] ?? "")) return;
    return reply.code(503).header("retry-after", "1").send(unavailable(connections.unavailableReason));
  });
}

/** For the error handler: a request that failed because Redis went away mid-request is a 503, not a 500. */
export function redisUnavailableAnswer(error: unknown): UnavailableAnswer | undefined {
  if (!isRedisUnavailableError(error)) return undefined;
  return unavailable(error instanceof Error ? error.message : "connection lost");
}
