import { STREAM_CATALOG } from "../../libs/contract/catalog.js";
import { defineService } from "../../libs/service/service-context.js";
import { startServiceConsumer } from "../../libs/service/service-consumer.js";
import { ensurePartitionGroups } from "../../libs/streams/stream-writer.js";
import { limitsOf, parseEvidenceExtractorConfig } from "./config.js";
import { EvidenceStore } from "./evidence-store.js";
import { extractorMetrics } from "./extractor-metrics.js";
import { RecordBatch } from "./record-batch.js";
import { RecordProcessor } from "./record-processor.js";

/** engine.records -> identity bindings, per-runtime evidence state -> harness.evidence. */
export const evidenceExtractorService = defineService({
  name: "evidence-extractor",
  config: parseEvidenceExtractorConfig,
  async start(ctx, config) {
    const redis = ctx.connections.command;
    // We produce harness.evidence: its consumer group exists before our first entry.
    const { engineRecords, harnessEvidence } = STREAM_CATALOG;
    await ensurePartitionGroups(
      redis,
      ctx.keys,
      harnessEvidence,
      harnessEvidence.consumers.resultProducer.group,
    );
    const store = new EvidenceStore(redis, ctx.keys, config.EVIDENCE_BINDING_RETENTION_MS);
    const limits = limitsOf(config);
    const metrics = extractorMetrics(ctx.metrics);
    const processor = new RecordProcessor({
      store,
      limits,
      orderWaitMs: config.EVIDENCE_ORDER_WAIT_MS,
      metrics,
    });
    const batch = new RecordBatch({ store, limits, metrics });
    const consumer = await startServiceConsumer(ctx, {
      stream: engineRecords,
      group: engineRecords.consumers.evidenceExtractor.group,
      handle: async (entry) => {
        for (const record of entry.payload.records) await processor.process(record);
      },
      handleBatch: (entries) => batch.processEntries(entries),
      affects: ({ agentId, records }) => `runtime ${records.at(0)?.runtimeId} of agent ${agentId}`,
      // A lost entry must not hold its runtime back: the runtime goes on after its last record.
      onDeadLetter: async ({ payload }) => {
        const last = payload.records.at(-1);
        if (last) await processor.abandon(last);
      },
    });
    return { stop: () => consumer.stop() };
  },
});
