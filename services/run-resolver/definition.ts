import { parseConfig } from "../../libs/config/load-config.js";
import { STREAM_CATALOG } from "../../libs/contract/catalog.js";
import { defineService } from "../../libs/service/service-context.js";
import { startServiceConsumer } from "../../libs/service/service-consumer.js";
import { ensurePartitionGroups } from "../../libs/streams/stream-writer.js";
import { CrashPoint } from "../../libs/test-support/crash-point.js";
import { runResolverConfigSchema } from "./config.js";
import { ResultResolution } from "./result-resolution.js";
import { osRetentionSettingsOf, startOsRetentionSweep } from "./retention/os-retention.js";

/** Atomic result store, dedupe and run resolution: `os.routed` -> `os.resolved`. */
export const runResolverService = defineService({
  name: "run-resolver",
  config: (env) => parseConfig(runResolverConfigSchema, env),
  async start(ctx, config) {
    const redis = ctx.connections.command;
    const crashPoint = new CrashPoint(config, redis, ctx.keys);
    const resolution = new ResultResolution(redis, ctx.keys, crashPoint, ctx.log, ctx.metrics);
    // The downstream group exists before the first emit, so nothing we emit precedes its consumer's cursor.
    const { osRouted, osResolved } = STREAM_CATALOG;
    await ensurePartitionGroups(redis, ctx.keys, osResolved, osResolved.consumers.ttsDispatcher.group);
    const consumer = await startServiceConsumer(ctx, {
      stream: osRouted,
      group: osRouted.consumers.runResolver.group,
      handle: ({ payload }) => resolution.apply(payload),
      ownerOf: (payload) => payload.deviceId,
    });
    const retention = startOsRetentionSweep(redis, ctx.keys, osRetentionSettingsOf(config), ctx.log);
    return {
      async stop() {
        await retention.stop();
        await consumer.stop();
      },
    };
  },
});
