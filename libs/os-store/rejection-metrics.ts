import { Counter } from "prom-client";
import { perRegistry } from "../metrics/per-registry.js";
import { rejectionReasonSchema } from "../contract/os-audit-records.js";

/**
 * `os_rejected_events_total`: the router and the run-resolver both reject Harness result events into `B:rejections`,
 * and both count them on this family (each under its own `service` label), every known reason from 0.
 */
export const rejectedEventsCounter = perRegistry((registry) => {
  const counter = new Counter({
    name: "os_rejected_events_total",
    help: "Harness result events rejected whole by the router or run-resolver, by reason",
    labelNames: ["reason"],
    registers: [registry],
  });
  for (const reason of rejectionReasonSchema.options) counter.inc({ reason }, 0);
  return counter;
});
