import { parseConfig } from "../../libs/config/load-config.js";
import { STREAM_CATALOG } from "../../libs/contract/catalog.js";
import { CompletionMarks } from "../../libs/os-store/completion-marks.js";
import { defineService } from "../../libs/service/service-context.js";
import { startServiceConsumer } from "../../libs/service/service-consumer.js";
import { InstanceIdentity } from "../../libs/harness-store/instance-identity.js";
import { producerEnvSchema } from "./config.js";
import { DeviceLedger } from "./device-ledger.js";
import { EvidenceHandler } from "./evidence-handler.js";
import { producerMetrics } from "./producer-metrics.js";
import { harnessRetentionSettingsOf, startHarnessRetentionSweep } from "./retention/harness-retention.js";

/** harness.evidence -> receipts, immutable results and per-device event logs. */
export const resultProducerService = defineService({
  name: "result-producer",
  config: (env) => parseConfig(producerEnvSchema, env),
  async start(ctx, config) {
    const redis = ctx.connections.command;
    const handler = new EvidenceHandler({
      ledger: new DeviceLedger(redis, ctx.keys, config),
      identity: new InstanceIdentity(redis, ctx.keys),
      config,
      log: ctx.log,
      completions: new CompletionMarks(redis, ctx.keys),
      ...producerMetrics(ctx.metrics),
    });
    const consumer = await startServiceConsumer(ctx, {
      stream: STREAM_CATALOG.harnessEvidence,
      group: STREAM_CATALOG.harnessEvidence.consumers.resultProducer.group,
      handle: (entry) => handler.handle([entry.payload]),
      handleBatch: async (entries) => {
        await handler.handle(entries.map((entry) => entry.payload));
        return [];
      },
    });
    const retention = startHarnessRetentionSweep(
      redis,
      ctx.keys,
      harnessRetentionSettingsOf(config),
      ctx.log,
    );
    return {
      async stop() {
        await retention.stop();
        await consumer.stop();
      },
    };
  },
});
