import type { Registry } from "prom-client";

/**
 * Get-or-create for a set of series: the all-in-one process runs every service on one registry, and prom-client
 * refuses a second metric of the same name, so each metrics class is built once per registry and then shared.
 */
export function perRegistry<Metrics>(
  create: (registry: Registry) => Metrics,
): (registry: Registry) => Metrics {
  const built = new WeakMap<Registry, Metrics>();
  return (registry) => {
    let metrics = built.get(registry);
    if (metrics === undefined) {
      metrics = create(registry);
      built.set(registry, metrics);
    }
    return metrics;
  };
}
