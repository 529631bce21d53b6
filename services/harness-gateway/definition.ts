import {
  harnessLimitsSchema,
  MAX_PROMPT_BYTES,
  type HarnessLimits,
} from "../../libs/contract/harness-wire.js";
import { MAX_GROUP_MEMBERS, MAX_RESULT_PAYLOAD_BYTES } from "../../libs/contract/turn-result.js";
import { defineService } from "../../libs/service/service-context.js";
import { ensurePartitionGroups } from "../../libs/streams/stream-writer.js";
import { STREAM_CATALOG } from "../../libs/contract/catalog.js";
import { AgentDirectory } from "./agent-directory.js";
import { loadGatewayConfig, type GatewayConfig } from "./config.js";
import { gatewayMetrics } from "./metrics.js";
import { sweepUndispatched } from "./reservations/dispatch-sweep.js";
import { ReservationStore } from "./reservations/reservation-store.js";
import { registerAdminRoutes } from "./revocation/admin-routes.js";
import { harnessOperatorGate } from "./operator-gate.js";
import { serveApiDocs } from "../../libs/http/api-docs.js";
import { DeviceEventLog } from "./store/event-log.js";
import { eventsChannel, revocationsChannel } from "../../libs/harness-store/harness-keys.js";
import { InstanceIdentity } from "../../libs/harness-store/instance-identity.js";
import { SessionRegistry } from "./transport/session-registry.js";
import { registerHarnessRoute } from "./ws-route.js";

export function publishedLimits(config: GatewayConfig): HarnessLimits {
  return harnessLimitsSchema.parse({
    receiptCapacity: config.RECEIPT_CAPACITY,
    receiptRetentionSeconds: config.RECEIPT_RETENTION_SECONDS,
    eventCapacity: config.EVENT_CAPACITY,
    eventRetentionSeconds: config.EVENT_RETENTION_SECONDS,
    resultRetentionSeconds: config.RESULT_RETENTION_SECONDS,
    maxPromptBytes: MAX_PROMPT_BYTES,
    maxGroupMembers: MAX_GROUP_MEMBERS,
    maxResultPayloadBytes: MAX_RESULT_PAYLOAD_BYTES,
    rateLimitBurst: config.RATE_LIMIT_BURST,
    rateLimitPerSecond: config.RATE_LIMIT_PER_SECOND,
    maxInFlight: config.MAX_IN_FLIGHT,
  });
}

/** Reservations, the Harness WebSocket transport, capability negotiation, replay/resync and revocation. */
export const harnessGatewayService = defineService({
  name: "harness-gateway",
  config: loadGatewayConfig,
  async start(ctx, { config, agents }) {
    const redis = ctx.connections.command;
    const metrics = gatewayMetrics(ctx.metrics);
    const reservations = new ReservationStore(redis, ctx.keys, {
      capacity: config.RECEIPT_CAPACITY,
      retentionMs: config.RECEIPT_RETENTION_SECONDS * 1000,
    });
    // Each machine's engine-runner reads harness.dispatch in its own group; the gateway creates the groups of the
    // machines it dispatches to as well, so no dispatch can predate a runner's group.
    const { harnessDispatch } = STREAM_CATALOG;
    for (const machineId of new Set(agents.map((agent) => agent.machineId)))
      await ensurePartitionGroups(
        redis,
        ctx.keys,
        harnessDispatch,
        harnessDispatch.consumers.engineRunner(machineId).group,
      );
    const registry = new SessionRegistry(
      ctx.connections.subscriber("harness-gateway/notifications"),
      { events: eventsChannel(ctx.keys), revocations: revocationsChannel(ctx.keys) },
      ctx.log,
    );
    await registry.start(config.LIVE_CATCHUP_MS);
    ctx.health.addReadiness("harness-gateway-notifications", async () => registry.isSubscribed());
    registerHarnessRoute(ctx.http, {
      redis,
      keys: ctx.keys,
      secret: config.HARNESS_JWT_SECRET,
      registry,
      deps: {
        config,
        limits: publishedLimits(config),
        agents: new AgentDirectory(agents),
        reservations,
        eventLog: new DeviceEventLog(redis, ctx.keys),
        identity: new InstanceIdentity(redis, ctx.keys),
        metrics,
        log: ctx.log,
      },
    });
    const operators = harnessOperatorGate(config.HARNESS_JWT_SECRET, config.HARNESS_TOKEN_MAX_LIFETIME_S);
    registerAdminRoutes(ctx.http, redis, ctx.keys, operators);
    await serveApiDocs(ctx.http, operators);

    const sweep = () =>
      sweepUndispatched(redis, ctx.keys, reservations, config.DISPATCH_SWEEP_MIN_AGE_MS, ctx.log);
    await sweep();
    let sweeping = Promise.resolve();
    const sweeper = setInterval(() => {
      sweeping = sweeping.then(sweep).then(
        () => undefined,
        (error: unknown) => ctx.log.error({ err: String(error) }, "dispatch sweep failed"),
      );
    }, config.DISPATCH_SWEEP_INTERVAL_MS);
    sweeper.unref();
    return {
      async stop() {
        clearInterval(sweeper);
        await sweeping;
        await registry.stop();
      },
    };
  },
});
