import { Counter, type Registry } from "prom-client";
import { perRegistry } from "../../libs/metrics/per-registry.js";

/** What the store-result step answers (lua/store-result-1.lua). */
const STORE_OUTCOMES = ["stored", "stored_not_emitted", "already_emitted", "unclaimed", "content_changed"];

/** The run-resolver's series, built once per registry, every known label value from 0. */
export const resolverMetrics = perRegistry((registry) => {
  const metrics = resolverSeries(registry);
  for (const outcome of STORE_OUTCOMES) metrics.outcomes.inc({ outcome }, 0);
  return metrics;
});

const resolverSeries = (registry: Registry) => ({
  outcomes: new Counter({
    name: "os_results_applied_total",
    help: "Routed results by store outcome",
    labelNames: ["outcome"],
    registers: [registry],
  }),
  skippedRuns: new Counter({
    name: "os_result_runs_skipped_total",
    help: "Listed runs a stored result left as they were: no longer pending, or not claimed for that result",
    registers: [registry],
  }),
});
export type ResolverMetrics = ReturnType<typeof resolverMetrics>;
