import { Counter } from "prom-client";
import { perRegistry } from "../../libs/metrics/per-registry.js";
import { rejectedEventsCounter } from "../../libs/os-store/rejection-metrics.js";

/** The run-resolver's series, built once per registry; rejections share the router's series. */
export const resolverMetrics = perRegistry((registry) => ({
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
}));
export type ResolverMetrics = ReturnType<typeof resolverMetrics>;
