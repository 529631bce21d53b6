import { randomUUID } from "node:crypto";
import { parseConfig } from "../../libs/config/load-config.js";
import { STREAM_CATALOG } from "../../libs/contract/catalog.js";
import { defineService } from "../../libs/service/service-context.js";
import { errorMessage } from "../../libs/errors/error-message.js";
import { deviceGatewayConfigSchema } from "./config.js";
import { LampConnections } from "./lamp-connections.js";
import { LampFrames } from "./lamp-frames.js";
import { playbackDelivery } from "./playback-delivery.js";
import { GatewayHeartbeat } from "./gateway-heartbeat.js";
import { deviceGatewayMetrics } from "./gateway-metrics.js";
import { registerOsApi } from "./os-api.js";
import { OsQueries } from "../../libs/os-store/os-queries.js";
import { OsAuthenticator, osOperatorGate } from "../../libs/os-store/os-authenticator.js";
import { serveApiDocs } from "../../libs/http/api-docs.js";
import { registerLampAdminRoutes } from "./admin-routes.js";
import { watchLampRevocations } from "../../libs/os-store/lamp-revocations.js";
import { registerLampRoute } from "./lamp-ws-route.js";
import { ReceiptWaiters } from "./receipt-waiters.js";
import { RunRegistration } from "./run-registration.js";
import { RunUpdateFeed } from "./run-update-feed.js";
import { relistAfterMsFor } from "../../libs/retention/retention-index.js";
import { osRetentionIndex } from "../../libs/retention/retention-keys.js";
import { StreamTail } from "../../libs/streams/stream-tail.js";

/** The Lamp's edge: the Lamp WebSocket, run registration, playback delivery and acks, and the OS query API. */
export const deviceGatewayService = defineService({
  name: "device-gateway",
  config: (env) => parseConfig(deviceGatewayConfigSchema, env),
  async start(ctx, config) {
    const instanceId = config.GATEWAY_INSTANCE_ID ?? randomUUID();
    const redis = ctx.connections.command;
    const metrics = deviceGatewayMetrics(ctx.metrics);
    const waiters = new ReceiptWaiters();
    const connections = new LampConnections({
      redis,
      keys: ctx.keys,
      instanceId,
      presenceTtlMs: config.LAMP_PRESENCE_TTL_MS,
      log: ctx.log,
    });
    const updates = new RunUpdateFeed({
      redis,
      keys: ctx.keys,
      log: ctx.log,
      sent: metrics.runUpdates,
      sweepIntervalMs: config.RUN_UPDATE_SWEEP_MS,
    });
    await updates.listen(ctx.connections.subscriber("device-gateway/run-updates"));
    const frames = new LampFrames({
      redis,
      keys: ctx.keys,
      registration: new RunRegistration(
        redis,
        ctx.keys,
        instanceId,
        config.VOICE_TARGET_TTL_MS,
        {
          rateBurst: config.LAMP_RATE_LIMIT_BURST,
          ratePerSecond: config.LAMP_RATE_LIMIT_PER_SECOND,
          maxPendingRuns: config.LAMP_MAX_PENDING_RUNS,
        },
        ctx.base.STREAM_PARTITIONS,
        osRetentionIndex(redis, ctx.keys, relistAfterMsFor(config.RESULT_RETENTION_MS)),
      ),
      waiters,
      updates,
      receiptWaitMs: config.RECEIPT_WAIT_MS,
      maxQueuedRepeats: config.PLAYBACK_MAX_QUEUED_REPEATS,
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
    const deliveryTail = new StreamTail({
      reader: ctx.connections.blocking(delivery.name),
      streamKey: ctx.keys.stream(delivery.name),
      schema: delivery.schema,
      log: ctx.log,
      deliver: playbackDelivery({ connections, duplicates: metrics.duplicates, log: ctx.log }),
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

    const auth = new OsAuthenticator(redis, ctx.keys, config.AUTH_JWT_SECRET, config.OS_TOKEN_MAX_LIFETIME_S);
    await watchLampRevocations(ctx.connections.subscriber("device-gateway/revocations"), ctx.keys, {
      revoked: (deviceId) => {
        connections.enforceRevocation(deviceId).catch((error: unknown) => {
          ctx.log.warn({ deviceId, err: errorMessage(error) }, "revoked sockets not closed");
        });
      },
      recheckAll: () => void connections.enforceAllRevocations(),
    });
    registerLampRoute(ctx.http, {
      redis,
      keys: ctx.keys,
      partitions: ctx.base.STREAM_PARTITIONS,
      auth,
      frames,
      connections,
      updates,
      instanceId,
      sockets: metrics.sockets,
      socketsRefused: metrics.socketsRefused,
      keepalive: { pingIntervalMs: config.WS_PING_INTERVAL_MS, pongTimeoutMs: config.WS_PONG_TIMEOUT_MS },
      maxSocketsPerDevice: config.LAMP_MAX_SOCKETS_PER_DEVICE,
      maxQueuedFrames: config.LAMP_SOCKET_MAX_QUEUED_FRAMES,
      log: ctx.log,
    });
    const queries = new OsQueries(redis, ctx.keys);
    registerOsApi(ctx.http, queries, auth);
    registerLampAdminRoutes(ctx.http, redis, ctx.keys, auth);
    await serveApiDocs(ctx.http, osOperatorGate(auth));
    ctx.log.info({ instanceId }, "device-gateway started");

    return {
      async stop() {
        updates.close();
        await connections.close();
        await replyTail.stop();
        await deliveryTail.stop();
        await heartbeat.stop();
      },
    };
  },
});
