import { Counter } from "prom-client";
import { perRegistry } from "../metrics/per-registry.js";

/**
 * `os_rejected_events_total`: the router and the run-resolver both reject Harness result events into `B:rejections`,
 * and both count them on this one series (one registry in the all-in-one process).
 */
export const rejectedEventsCounter = perRegistry(
  (registry) =>
    new Counter({
      name: "os_rejected_events_total",
      help: "Harness result events rejected whole by the router, by reason",
      labelNames: ["reason"],
      registers: [registry],
    }),
);
