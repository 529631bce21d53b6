import { Counter, type Registry } from "prom-client";
import { harnessEvidenceSchema } from "../../libs/contract/pipeline-payloads.js";
import { perRegistry } from "../../libs/metrics/per-registry.js";

const LEDGER_STATUSES = ["applied", "withheld", "duplicate"] as const;

/** Why a boundary or evidence published nothing: evidence.missing reasons and the result builder's own. */
const WITHHELD_REASONS = [
  "RESULT_EVIDENCE_MISSING",
  "ENGINE_EXITED",
  "EVIDENCE_EVICTED",
  "OVERLAPPING_INPUTS",
  "REQUEST_NOT_RESUMABLE",
  "EVIDENCE_LOST",
  "RESULT_OWNER_MIXED",
  "RESULT_TOO_LARGE",
  "RESULT_EMPTY",
] as const;

export interface ProducerMetrics {
  applied: Counter<"kind" | "status">;
  withheld: Counter<"reason">;
}

/** Built once per registry; every evidence kind × status and every withheld reason starts at 0. */
export const producerMetrics = perRegistry((registry): ProducerMetrics => {
  const metrics = producerSeries(registry);
  for (const kind of harnessEvidenceSchema.options.map((option) => option.shape.kind.value))
    for (const status of LEDGER_STATUSES) metrics.applied.inc({ kind, status }, 0);
  for (const reason of WITHHELD_REASONS) metrics.withheld.inc({ reason }, 0);
  return metrics;
});

const producerSeries = (registry: Registry): ProducerMetrics => ({
  applied: new Counter({
    name: "result_producer_evidence_total",
    help: "Evidence applied to device stores, by evidence kind and status (applied, withheld, duplicate).",
    labelNames: ["kind", "status"],
    registers: [registry],
  }),
  withheld: new Counter({
    name: "result_producer_withheld_results_total",
    help: "Boundaries or evidence that published nothing, by reason code.",
    labelNames: ["reason"],
    registers: [registry],
  }),
});
