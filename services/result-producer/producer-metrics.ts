import { Counter } from "prom-client";
import { perRegistry } from "../../libs/metrics/per-registry.js";

export interface ProducerMetrics {
  applied: Counter<"kind" | "status">;
  withheld: Counter<"reason">;
}

export const producerMetrics = perRegistry((registry): ProducerMetrics => ({
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
}));
