import { randomUUID } from "node:crypto";
import { parseConfig } from "../../libs/config/load-config.js";
import { defineService } from "../../libs/service/service-context.js";
import { routerConfigSchema } from "./config.js";
import { DeviceLeases } from "./device-leases.js";
import { DeviceSession } from "./device-session.js";
import { RouterMetrics } from "./router-metrics.js";

/** The OS's link to the Harness: one authenticated session per device, validation and member resolution. */
export const routerService = defineService({
  name: "router",
  config: (env) => parseConfig(routerConfigSchema, env),
  async start(ctx, config) {
    const owner = config.ROUTER_INSTANCE_ID ?? `${ctx.consumerName}-${randomUUID().slice(0, 8)}`;
    const metrics = RouterMetrics.of(ctx.metrics);
    const redis = ctx.connections.command;
    const leases = new DeviceLeases({
      redis,
      keys: ctx.keys,
      owner,
      ttlMs: config.ROUTER_LEASE_TTL_MS,
      log: ctx.log,
      changed: (count) => metrics.sessions.set(count),
      own: async (deviceId) => {
        const session = new DeviceSession({
          deviceId,
          leaseOwner: owner,
          config,
          redis,
          reader: ctx.connections.blocking(`router/session/${deviceId}`),
          keys: ctx.keys,
          metrics,
          log: ctx.log,
        });
        await session.start();
        return session;
      },
    });
    leases.start();
    ctx.health.addLiveness("router/leases", () => leases.isAlive());
    ctx.log.info({ owner, harness: config.HARNESS_URL }, "router started");
    return { stop: () => leases.stop() };
  },
});
