import { Counter, type Registry } from "prom-client";
import { engineKindSchema } from "../../libs/contract/engine.js";
import { harnessEvidenceSchema } from "../../libs/contract/pipeline-payloads.js";
import { perRegistry } from "../../libs/metrics/per-registry.js";

export interface ExtractorMetrics {
  records: Counter<"engine" | "status">;
  evidence: Counter<"kind">;
  ignored: Counter<"engine" | "reason">;
  bindingConflicts: Counter;
}

const RECORD_STATUSES = ["applied", "redelivered", "out_of_order", "superseded_race", "lost"] as const;

/** Built once per registry; records by engine × status and evidence by kind start at 0. */
export const extractorMetrics = perRegistry((registry): ExtractorMetrics => {
  const metrics = extractorSeries(registry);
  for (const engine of engineKindSchema.options)
    for (const status of RECORD_STATUSES) metrics.records.inc({ engine, status }, 0);
  for (const kind of harnessEvidenceSchema.options.map((option) => option.shape.kind.value))
    metrics.evidence.inc({ kind }, 0);
  return metrics;
});

const extractorSeries = (registry: Registry): ExtractorMetrics => ({
  records: new Counter({
    name: "evidence_extractor_records_total",
    help: "engine.records handled, by engine and status (applied, redelivered, out_of_order, superseded_race, lost: dead-lettered and passed over).",
    labelNames: ["engine", "status"],
    registers: [registry],
  }),
  evidence: new Counter({
    name: "evidence_extractor_evidence_total",
    help: "harness.evidence entries emitted, by kind.",
    labelNames: ["kind"],
    registers: [registry],
  }),
  ignored: new Counter({
    name: "evidence_extractor_ignored_frames_total",
    help: "Engine frames or rows that proved nothing and were skipped, by engine and reason.",
    labelNames: ["engine", "reason"],
    registers: [registry],
  }),
  bindingConflicts: new Counter({
    name: "evidence_extractor_binding_conflicts_total",
    help: "Identity bindings found with different content on reprocessing (kept as first written).",
    registers: [registry],
  }),
});
