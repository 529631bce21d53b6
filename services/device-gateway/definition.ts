import { randomUUID } from "node:crypto";
import type { FastifyRequest } from "fastify";
import { Counter, Gauge, type Registry } from "prom-client";
import type { Principal } from "../../libs/auth/tokens.js";
import { parseConfig } from "../../libs/config/load-config.js";
import { STREAM_CATALOG } from "../../libs/contract/catalog.js";
import { knownDevicesKey } from "../../libs/os-store/os-keys.js";
import { defineService } from "../../libs/service/service-context.js";
import { errorMessage } from "../../libs/errors/error-message.js";
import { deviceGatewayConfigSchema } from "./config.js";
import { LampConnections } from "./lamp-connections.js";
import { LampFrames } from "./lamp-frames.js";
import { DeliveredPlaybacks } from "./delivered-playbacks.js";
import { GatewayHeartbeat } from "./gateway-heartbeat.js";
import { registerOsApi } from "./os-api.js";
import { OsQueries } from "./os-queries.js";
import { LampAuthenticator } from "./principal.js";
import { registerLampAdminRoutes } from "./admin-routes.js";
import { watchLampRevocations } from "./lamp-revocation.js";
import { ReceiptWaiters } from "./receipt-waiters.js";
import { RunRegistration } from "./run-registration.js";
import { StreamTail } from "./stream-tail.js";

function metricsOf(registry: Registry) {
  const frames = registry.getSingleMetric("os_lamp_frames_total");
  const sockets = registry.getSingleMetric("os_lamp_sockets");
  const duplicates = registry.getSingleMetric("os_lamp_duplicate_deliveries_total");
  return {
    frames:
      frames instanceof Counter
        ? frames
        : new Counter({
            name: "os_lamp_frames_total",
            help: "Frames received from Lamps, by type and result",
            labelNames: ["type", "result"],
            registers: [registry],
          }),
    sockets:
      sockets instanceof Gauge
        ? sockets
        : new Gauge({ name: "os_lamp_sockets", help: "Open Lamp WebSockets", registers: [registry] }),
    duplicates:
      duplicates instanceof Counter
        ? duplicates
        : new Counter({
            name: "os_lamp_duplicate_deliveries_total",
            help: "playback.start delivery entries refused because this instance already delivered that playbackId",
            registers: [registry],
          }),
  };
}

/** The Lamp WebSocket, run registration, playback delivery and acks, and the OS query API. */
export const deviceGatewayService = defineService({
  name: "device-gateway",
  config: (env) => parseConfig(deviceGatewayConfigSchema, env),
  async start(ctx, config) {
    const instanceId = config.GATEWAY_INSTANCE_ID ?? randomUUID();
    const redis = ctx.connections.command;
    const metrics = metricsOf(ctx.metrics);
    const waiters = new ReceiptWaiters();
    const connections = new LampConnections({
      redis,
      keys: ctx.keys,
      instanceId,
      presenceTtlMs: config.LAMP_PRESENCE_TTL_MS,
      log: ctx.log,
    });
    const frames = new LampFrames({
      redis,
      keys: ctx.keys,
      registration: new RunRegistration(redis, ctx.keys, instanceId, config.VOICE_TARGET_TTL_MS),
      waiters,
      receiptWaitMs: config.RECEIPT_WAIT_MS,
      log: ctx.log,
      frames: metrics.frames,
    });
    const replies = STREAM_CATALOG.gatewayReplies(instanceId);
    const replyTail = new StreamTail({
      reader: ctx.connections.blocking(replies.name),
      streamKey: ctx.keys.stream(replies.name),
      schema: replies.schema,
      log: ctx.log,
      deliver: (reply) => waiters.deliver(reply),
    });
    const delivery = STREAM_CATALOG.lampDelivery(instanceId);
    const delivered = new DeliveredPlaybacks();
    const deliveryTail = new StreamTail({
      reader: ctx.connections.blocking(delivery.name),
      streamKey: ctx.keys.stream(delivery.name),
      schema: delivery.schema,
      log: ctx.log,
      deliver: ({ deviceId, frame }) => {
        if (!delivered.firstDelivery(frame.playbackId)) {
          metrics.duplicates.inc();
          ctx.log.warn(
            { deviceId, playbackId: frame.playbackId },
            "duplicate playback.start delivery refused",
          );
          return;
        }
        const sent = connections.send(deviceId, frame);
        ctx.log.info({ deviceId, playbackId: frame.playbackId, sockets: sent }, "playback.start delivered");
      },
    });
    const heartbeat = new GatewayHeartbeat({
      redis,
      keys: ctx.keys,
      instanceId,
      intervalMs: config.LAMP_GATEWAY_HEARTBEAT_MS,
      log: ctx.log,
    });
    await heartbeat.start();
    replyTail.start();
    deliveryTail.start();
    ctx.health.addLiveness("device-gateway/replies", () => replyTail.isAlive());
    ctx.health.addLiveness("device-gateway/delivery", () => deliveryTail.isAlive());

    const auth = new LampAuthenticator(redis, ctx.keys, config.AUTH_JWT_SECRET);
    await watchLampRevocations(
      ctx.connections.blocking("device-gateway/revocations"),
      ctx.keys,
      (deviceId) => {
        connections.enforceRevocation(deviceId).catch((error: unknown) => {
          ctx.log.warn({ deviceId, err: errorMessage(error) }, "revoked sockets not closed");
        });
      },
    );
    const principals = new WeakMap<FastifyRequest, { principal: Principal; issuedAt: number }>();
    ctx.http.get(
      "/v1/lamp/ws",
      {
        websocket: true,
        // Refused before the upgrade: an unauthenticated client never gets a socket.
        preValidation: async (request, reply) => {
          const authentication = await auth.authenticate(request);
          if (!authentication.ok)
            return reply
              .code(401)
              .send({ error: { code: authentication.code, message: authentication.message } });
          if (authentication.principal.role !== "device")
            return reply
              .code(401)
              .send({ error: { code: "UNAUTHORIZED", message: "device token required" } });
          principals.set(request, authentication);
        },
      },
      (socket, request) => {
        const authenticated = principals.get(request);
        if (!authenticated) return socket.close(1008, "unauthorized");
        const { deviceId } = authenticated.principal;
        metrics.sockets.inc();
        // Frames of one socket are answered in the order they arrived.
        let chain: Promise<void> = Promise.resolve();
        socket.on("message", (data) => {
          // Logged, never left rejected: that would wedge the socket and, unhandled, end the process.
          chain = chain
            .then(async () => {
              const answer = await frames.handle(deviceId, data.toString());
              if (answer && socket.readyState === socket.OPEN) socket.send(JSON.stringify(answer));
            })
            .catch((error: unknown) =>
              ctx.log.error({ deviceId, err: errorMessage(error) }, "lamp frame not answered"),
            );
        });
        socket.on("error", (error) => ctx.log.warn({ deviceId, err: error.message }, "lamp socket error"));
        socket.on("close", () => {
          metrics.sockets.dec();
          void connections.remove(deviceId, socket);
        });
        void connections.add(deviceId, socket, authenticated.issuedAt);
        void redis.sadd(knownDevicesKey(ctx.keys), deviceId).catch((error: unknown) => {
          ctx.log.warn({ deviceId, err: errorMessage(error) }, "device not added to the known set");
        });
      },
    );
    registerOsApi(ctx.http, new OsQueries(redis, ctx.keys), auth);
    registerLampAdminRoutes(ctx.http, redis, ctx.keys, auth);
    ctx.log.info({ instanceId }, "device-gateway started");

    return {
      async stop() {
        await connections.close();
        await replyTail.stop();
        await deliveryTail.stop();
        await heartbeat.stop();
      },
    };
  },
});
