import { Counter, type Registry } from "prom-client";
import { perRegistry } from "../../libs/metrics/per-registry.js";
import { rejectedEventsCounter } from "../../libs/os-store/rejection-metrics.js";

/** What the store-result step answers (lua/store-result-1.lua). */
const STORE_OUTCOMES = [
  "stored",
  "stored_not_emitted",
  "already_emitted",
  "content_changed",
  "member_invalid",
];

/** The run-resolver's series, built once per registry, every known label value from 0; rejections share the router's family. */
export const resolverMetrics = perRegistry((registry) => {
  const metrics = resolverSeries(registry);
  metrics.protocolErrors.inc({ code: "RESULT_CONTENT_CHANGED" }, 0);
  for (const outcome of STORE_OUTCOMES) metrics.outcomes.inc({ outcome }, 0);
  return metrics;
});

const resolverSeries = (registry: Registry) => ({
  protocolErrors: new Counter({
    name: "os_protocol_errors_total",
    help: "Results whose id came back with different content or membership",
    labelNames: ["code"],
    registers: [registry],
  }),
  outcomes: new Counter({
    name: "os_results_applied_total",
    help: "Routed results by store outcome",
    labelNames: ["outcome"],
    registers: [registry],
  }),
  rejected: rejectedEventsCounter(registry),
});
export type ResolverMetrics = ReturnType<typeof resolverMetrics>;
