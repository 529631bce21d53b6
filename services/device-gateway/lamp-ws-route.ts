import type { FastifyInstance, FastifyRequest } from "fastify";
import type { RedisClient } from "../../libs/redis/redis-client.js";
import type { Counter, Gauge } from "prom-client";
import type { Principal } from "../../libs/auth/tokens.js";
import { errorMessage } from "../../libs/errors/error-message.js";
import type { KeepaliveSettings } from "../../libs/http/peer-silence.js";
import { keepSocketAlive } from "../../libs/http/socket-keepalive.js";
import { closeAtTokenExpiry } from "../../libs/http/token-expiry.js";
import type { Logger } from "../../libs/logging/logger.js";
import type { Keyspace } from "../../libs/redis/keyspace.js";
import { TOO_MANY_SOCKETS_CLOSE_CODE, type LampConnections } from "./lamp-connections.js";
import { LampFrameQueue } from "./lamp-frame-queue.js";
import { registerLamp } from "./lamp-registration.js";
import type { LampFrames } from "./lamp-frames.js";
import type { OsAuthenticator } from "../../libs/os-store/os-authenticator.js";
import type { RunUpdateFeed } from "./run-update-feed.js";
import { z } from "zod";
import { BEARER, errorResponses } from "../../libs/http/api-docs.js";

export const LAMP_WS_PATH = "/v1/lamp/ws";

const lampUpgradeSchema = {
  summary: 'The Lamp WebSocket (docs/wire-protocol.md "Lamp WebSocket"); device tokens only',
  tags: ["websocket"],
  security: BEARER,
  response: {
    101: z.null().describe("switching to the WebSocket protocol"),
    ...errorResponses({ 401: "no valid device token (REVOKED for a revoked device's older token)" }),
  },
};

/**
 * `GET /v1/lamp/ws`: a device token is checked before the upgrade (401 otherwise); a device's socket beyond
 * `maxSocketsPerDevice` on this instance is closed at once with 4003, the device's open sockets untouched. Each
 * socket's frames are answered in the order they arrived, and it is not read while `maxQueuedFrames` wait; the socket
 * is registered for delivery and presence while it is open. It is closed with 4002 when its token expires and
 * terminated when it stops answering pings; a frame still queued when the socket closed is dropped unanswered
 * (nobody is left to answer, so no run is started for it).
 */
export function registerLampRoute(
  http: FastifyInstance,
  options: {
    redis: RedisClient;
    keys: Keyspace;
    partitions: number;
    auth: OsAuthenticator;
    frames: LampFrames;
    connections: LampConnections;
    updates: RunUpdateFeed;
    instanceId: string;
    sockets: Gauge;
    socketsRefused: Counter<"reason">;
    keepalive: KeepaliveSettings;
    /** Sockets one device may hold on this instance; one more is closed with TOO_MANY_SOCKETS_CLOSE_CODE. */
    maxSocketsPerDevice: number;
    /** Frames waiting on one socket beyond which it is not read (LampFrameQueue). */
    maxQueuedFrames: number;
    log: Logger;
  },
): void {
  const { redis, keys, auth, frames, connections, updates, sockets, socketsRefused, keepalive, log } =
    options;
  const { maxSocketsPerDevice, maxQueuedFrames } = options;
  const principals = new WeakMap<FastifyRequest, { principal: Principal; issuedAt: number }>();
  http.get(
    LAMP_WS_PATH,
    {
      websocket: true,
      schema: lampUpgradeSchema,
      // Refused before the upgrade: an unauthenticated client never gets a socket.
      preValidation: async (request, reply) => {
        const authentication = await auth.authenticate(request);
        if (!authentication.ok)
          return reply
            .code(401)
            .send({ error: { code: authentication.code, message: authentication.message } });
        if (authentication.principal.role !== "device")
          return reply.code(401).send({ error: { code: "UNAUTHORIZED", message: "device token required" } });
        principals.set(request, authentication);
      },
    },
    (socket, request) => {
      const authenticated = principals.get(request);
      if (!authenticated) return socket.close(1008, "unauthorized");
      const { deviceId } = authenticated.principal;
      if (connections.count(deviceId) >= maxSocketsPerDevice) {
        socketsRefused.inc({ reason: "too_many_sockets" });
        log.info(
          { deviceId, maxSocketsPerDevice },
          "lamp socket refused: the device has its sockets already",
        );
        return socket.close(TOO_MANY_SOCKETS_CLOSE_CODE, "too many sockets for this device");
      }
      sockets.inc();
      updates.attach(deviceId, socket);
      closeAtTokenExpiry(socket, request.headers.authorization);
      keepSocketAlive(socket, keepalive, (silentForMs) =>
        log.info({ deviceId, silentForMs }, "lamp socket stopped answering pings; terminated"),
      );
      const answer = async (text: string) => {
        if (socket.readyState !== socket.OPEN) return frames.handleAfterClose(deviceId, text);
        const reply = await frames.handle(deviceId, socket, text);
        if (reply && socket.readyState === socket.OPEN) socket.send(JSON.stringify(reply));
      };
      // Logged, never left rejected: that would wedge the queue and, unhandled, end the process.
      const queue = new LampFrameQueue(socket, maxQueuedFrames, (data) =>
        answer(data.toString()).catch((error: unknown) =>
          log.error({ deviceId, err: errorMessage(error) }, "lamp frame not answered"),
        ),
      );
      socket.on("message", (data) => queue.push(data));
      socket.on("error", (error) => log.warn({ deviceId, err: error.message }, "lamp socket error"));
      socket.on("close", () => {
        sockets.dec();
        updates.detach(deviceId, socket);
        void connections.remove(deviceId, socket);
      });
      void registerLamp({
        redis,
        keys,
        partitions: options.partitions,
        connections,
        instanceId: options.instanceId,
        log,
        deviceId,
        socket,
        issuedAt: authenticated.issuedAt,
      });
    },
  );
}
