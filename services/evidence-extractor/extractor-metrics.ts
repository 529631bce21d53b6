import { Counter } from "prom-client";
import { perRegistry } from "../../libs/metrics/per-registry.js";

export interface ExtractorMetrics {
  records: Counter<"engine" | "status">;
  evidence: Counter<"kind">;
  ignored: Counter<"engine" | "reason">;
  bindingConflicts: Counter;
}

export const extractorMetrics = perRegistry((registry): ExtractorMetrics => ({
  records: new Counter({
    name: "evidence_extractor_records_total",
    help: "engine.records handled, by engine and status (applied, redelivered, out_of_order, superseded_race).",
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
}));
