import { randomUUID } from "node:crypto";
import { parseConfig } from "../../libs/config/load-config.js";
import { defineService } from "../../libs/service/service-context.js";
import { CommandWakeups } from "./command-wakeups.js";
import { routerConfigSchema } from "./config.js";
import { DeviceSession } from "./device-session.js";
import { PartitionDevices } from "./partition-devices.js";
import { PartitionLeases } from "../../libs/leases/partition-leases.js";
import { OsPartitionKeys, routerReplicasKey } from "../../libs/os-store/os-keys.js";
import { RouterMetrics } from "./router-metrics.js";

/**
 * The OS's link to the Harness: one authenticated session per active device of the partitions this replica leases,
 * validation and member resolution. Its Redis connections are two whatever the fleet: the shared command connection
 * and the wake-up subscriber (docs/scaling.md).
 */
export const routerService = defineService({
  name: "router",
  config: (env) => parseConfig(routerConfigSchema, env),
  async start(ctx, config) {
    const owner = config.ROUTER_INSTANCE_ID ?? `${ctx.consumerName}-${randomUUID().slice(0, 8)}`;
    const metrics = RouterMetrics.of(ctx.metrics);
    const redis = ctx.connections.command;
    const wakeups = new CommandWakeups(ctx.connections.subscriber("router/wakeups"), ctx.keys, ctx.log);
    const served = new Set<PartitionDevices>();
    const sessionsChanged = () =>
      metrics.sessions.set([...served].reduce((sum, partition) => sum + partition.size, 0));
    const leases = new PartitionLeases({
      redis,
      leaseKey: (partition) => new OsPartitionKeys(ctx.keys, partition).lease,
      replicasKey: routerReplicasKey(ctx.keys),
      owner,
      partitions: ctx.base.STREAM_PARTITIONS,
      ttlMs: config.ROUTER_LEASE_TTL_MS,
      log: ctx.log,
      changed: (change, held) => {
        metrics.partitions.set(held);
        metrics.partitionChanges.inc({ change });
      },
      own: async (partition) => {
        const devices = new PartitionDevices({
          redis,
          keys: ctx.keys,
          partition,
          owner,
          idleGraceMs: config.ROUTER_IDLE_GRACE_MS,
          sweepMs: config.ROUTER_DEVICE_SWEEP_MS,
          log: ctx.log,
          changed: sessionsChanged,
          open: async (deviceId) => {
            const session = new DeviceSession({
              deviceId,
              leaseOwner: owner,
              config,
              redis,
              keys: ctx.keys,
              metrics,
              log: ctx.log,
            });
            await session.start();
            return session;
          },
        });
        await wakeups.follow(partition, devices);
        served.add(devices);
        devices.start();
        return {
          async stop(graceful) {
            await wakeups.unfollow(partition);
            await devices.stop(graceful);
            served.delete(devices);
            sessionsChanged();
          },
        };
      },
    });
    leases.start();
    ctx.health.addLiveness("router/leases", () => leases.isAlive());
    ctx.log.info({ owner, harness: config.HARNESS_URL }, "router started");
    return { stop: () => leases.stop() };
  },
});
