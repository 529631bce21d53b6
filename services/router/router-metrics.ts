import { Counter, Gauge, type Registry } from "prom-client";

function counterOf(registry: Registry, name: string, help: string, labelNames: string[]): Counter {
  const existing = registry.getSingleMetric(name);
  if (existing instanceof Counter) return existing;
  return new Counter({ name, help, labelNames, registers: [registry] });
}

/** The router's own series; created once per registry (the all-in-one process shares one registry). */
export class RouterMetrics {
  readonly rejectedEvents: Counter;
  readonly events: Counter;
  readonly receiptConflicts: Counter;
  readonly sends: Counter;
  readonly sessions: Gauge;

  constructor(registry: Registry) {
    this.rejectedEvents = counterOf(
      registry,
      "os_rejected_events_total",
      "Harness result events rejected whole by the router, by reason",
      ["reason"],
    );
    this.events = counterOf(registry, "os_router_frames_total", "Harness frames handled by the router", [
      "kind",
      "verdict",
    ]);
    this.receiptConflicts = counterOf(
      registry,
      "os_receipt_conflicts_total",
      "Receipts that named another delivery or instance than the run already bound",
      ["source"],
    );
    this.sends = counterOf(registry, "os_harness_sends_total", "turn.send / turn.stop requests by answer", [
      "operation",
      "answer",
    ]);
    const gauge = registry.getSingleMetric("os_router_sessions");
    this.sessions =
      gauge instanceof Gauge
        ? gauge
        : new Gauge({
            name: "os_router_sessions",
            help: "Device Harness sessions this router replica holds",
            registers: [registry],
          });
  }
}
