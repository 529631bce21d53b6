import { collectDefaultMetrics, Registry } from "prom-client";

/** One registry per process; in all-in-one mode every service shares it, and labels carry the distinction. */
export function createMetricsRegistry(): Registry {
  const registry = new Registry();
  collectDefaultMetrics({ register: registry });
  return registry;
}
