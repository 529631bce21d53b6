import type { FastifyInstance, FastifyRequest } from "fastify";
import type { RedisClient } from "../../libs/redis/redis-client.js";
import { keepSocketAlive } from "../../libs/http/socket-keepalive.js";
import { closeAtTokenExpiry } from "../../libs/http/token-expiry.js";
import type { Keyspace } from "../../libs/redis/keyspace.js";
import { z } from "zod";
import { BEARER, errorResponses } from "../../libs/http/api-docs.js";
import type { GatewayMetrics } from "./metrics.js";
import { HarnessSession, type SessionDeps, type SessionPrincipal } from "./transport/harness-session.js";
import { authenticatePeer } from "./transport/peer-auth.js";
import type { SessionRegistry } from "./transport/session-registry.js";

export const HARNESS_WS_PATH = "/v1/harness/ws";

const harnessUpgradeSchema = {
  summary:
    'The Harness WebSocket (docs/wire-protocol.md "Harness WebSocket"); OS peer tokens (aud harness, role os)',
  tags: ["websocket"],
  security: BEARER,
  response: {
    101: z.null().describe("switching to the WebSocket protocol"),
    ...errorResponses({ 401: "no valid Harness peer token (REVOKED for a revoked device's older token)" }),
  },
};

/**
 * `GET /v1/harness/ws`: the bearer token is checked before the upgrade; a refused peer gets 401, never 5xx. A
 * session is closed with 4002 when its token expires and terminated when it stops answering pings.
 */
export function registerHarnessRoute(
  http: FastifyInstance,
  options: {
    redis: RedisClient;
    keys: Keyspace;
    secret: string;
    registry: SessionRegistry;
    deps: SessionDeps;
  },
): void {
  const principals = new WeakMap<FastifyRequest, SessionPrincipal>();
  const metrics: GatewayMetrics = options.deps.metrics;
  http.get(
    HARNESS_WS_PATH,
    {
      websocket: true,
      schema: harnessUpgradeSchema,
      preValidation: async (request, reply) => {
        const peer = await authenticatePeer(
          options.redis,
          options.keys,
          { secret: options.secret, maxLifetimeSeconds: options.deps.config.HARNESS_TOKEN_MAX_LIFETIME_S },
          request.headers.authorization,
        ).catch(() => ({ code: "UNAUTHORIZED" as const, message: "credential check unavailable" }));
        if ("code" in peer) {
          metrics.upgradesRefused.inc({ reason: peer.code });
          return reply.code(401).send({ error: peer });
        }
        principals.set(request, { deviceId: peer.deviceId, tokenIssuedAt: peer.tokenIssuedAt });
      },
    },
    (socket, request) => {
      const principal = principals.get(request);
      if (!principal) return socket.close(1008, "unauthenticated");
      const session = new HarnessSession(socket, principal, options.deps);
      options.registry.add(session);
      metrics.sessions.inc();
      closeAtTokenExpiry(socket, request.headers.authorization);
      const { WS_PING_INTERVAL_MS, WS_PONG_TIMEOUT_MS } = options.deps.config;
      keepSocketAlive(
        socket,
        { pingIntervalMs: WS_PING_INTERVAL_MS, pongTimeoutMs: WS_PONG_TIMEOUT_MS },
        (silentForMs) =>
          options.deps.log.info(
            { deviceId: principal.deviceId, silentForMs },
            "harness peer stopped answering pings; terminated",
          ),
      );
      socket.on("message", (data) => session.receive(data as Buffer));
      socket.on("close", () => {
        options.registry.remove(session);
        metrics.sessions.dec();
      });
    },
  );
}
