import { STREAMS } from "../../libs/contract/streams.js";
import type { ServiceDefinition } from "../../libs/service/service-context.js";
import { StreamConsumer } from "../../libs/streams/stream-consumer.js";
import { ensureConsumerGroup } from "../../libs/streams/stream-writer.js";
import { limitsOf, parseEvidenceExtractorConfig } from "./config.js";
import { EvidenceStore } from "./evidence-store.js";
import { createExtractorMetrics } from "./extractor-metrics.js";
import { RecordBatch } from "./record-batch.js";
import { RecordProcessor } from "./record-processor.js";

export const EVIDENCE_EXTRACTOR_GROUP = "evidence-extractor";

/** engine.records -> identity bindings, per-runtime evidence state -> harness.evidence. */
export const evidenceExtractorService: ServiceDefinition = {
  name: "evidence-extractor",
  checkConfig(env) {
    parseEvidenceExtractorConfig(env);
  },
  async start(ctx) {
    const config = parseEvidenceExtractorConfig(ctx.env);
    const redis = ctx.connections.command;
    // We produce harness.evidence: its consumer group exists before our first entry (DESIGN §2).
    await ensureConsumerGroup(redis, ctx.keys.stream(STREAMS.harnessEvidence.name), "result-producer");
    const store = new EvidenceStore(redis, ctx.keys, config.EVIDENCE_BINDING_RETENTION_MS);
    const limits = limitsOf(config);
    const metrics = createExtractorMetrics(ctx.metrics);
    const processor = new RecordProcessor({
      store,
      limits,
      orderWaitMs: config.EVIDENCE_ORDER_WAIT_MS,
      metrics,
    });
    const batch = new RecordBatch({ store, limits, metrics });
    const consumer = new StreamConsumer({
      connections: ctx.connections,
      keys: ctx.keys,
      stream: STREAMS.engineRecords,
      group: EVIDENCE_EXTRACTOR_GROUP,
      consumer: ctx.consumerName,
      settings: ctx.consumerSettings,
      log: ctx.log,
      metrics: ctx.metrics,
      handle: (entry) => processor.process(entry.payload),
      handleBatch: (entries) => batch.process(entries),
    });
    await consumer.start();
    ctx.health.addLiveness("evidence-extractor", () => consumer.isAlive());
    ctx.health.addReadiness("evidence-extractor-group", () => consumer.groupExists());
    return { stop: () => consumer.stop() };
  },
};
