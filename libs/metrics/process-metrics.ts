import { collectDefaultMetrics, Registry } from "prom-client";

/**
 * The metrics of one host process: a registry per hosted service whose series all carry `service="<name>"`, and the
 * process's own (CPU, memory, event loop) under `service="<process name>"`. In the all-in-one process every service
 * keeps its own label, so a dashboard filtered by service reads the same in both modes. `/metrics` merges the
 * registries into one exposition, one HELP/TYPE per family, since several services define the same families
 * (stream metrics, rejected events). It is itself the process's registry (where the process series live), so it
 * is served wherever a registry is.
 */
export class ProcessMetrics extends Registry {
  private readonly byService = new Map<string, Registry>();

  constructor(processName: string) {
    super();
    this.setDefaultLabels({ service: processName });
    collectDefaultMetrics({ register: this });
  }

  /** The registry a service defines its series on (one per service name). */
  forService(service: string): Registry {
    let registry = this.byService.get(service);
    if (registry === undefined) {
      registry = new Registry();
      registry.setDefaultLabels({ service });
      this.byService.set(service, registry);
    }
    return registry;
  }

  override async metrics(): Promise<string> {
    const services = [...this.byService.values()].map((registry) => registry.metrics());
    return mergeExpositions(await Promise.all([super.metrics(), ...services]));
  }
}

/** Text expositions merged by family: the first HELP/TYPE of a name, then every sample of that name, in order. */
export function mergeExpositions(expositions: string[]): string {
  const families = new Map<string, string[]>();
  for (const exposition of expositions) {
    let family: string[] = [];
    for (const line of exposition.split("\n")) {
      const header = /^# (HELP|TYPE) (\S+)/.exec(line);
      if (header?.[1] === "HELP") {
        const name = header[2] ?? "";
        const known = families.get(name);
        family = known ?? [line];
        if (!known) families.set(name, family);
      } else if (header?.[1] === "TYPE") {
        if (family.length === 1) family.push(line);
      } else if (line !== "") family.push(line);
    }
  }
  return `${[...families.values()].map((lines) => lines.join("\n")).join("\n\n")}\n`;
}
