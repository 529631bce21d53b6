import { Counter, Gauge, type Registry } from "prom-client";
import { OS_END_REASONS } from "../../libs/contract/run-update.js";
import { perRegistry } from "../../libs/metrics/per-registry.js";
import { rejectedEventsCounter } from "../../libs/os-store/rejection-metrics.js";

/** The router's own series; built once per registry (the all-in-one process shares one registry). */
export class RouterMetrics {
  static readonly of = perRegistry((registry) => new RouterMetrics(registry));

  readonly rejectedEvents: Counter;
  readonly protocolErrors: Counter;
  readonly events: Counter;
  readonly receiptConflicts: Counter;
  readonly sends: Counter;
  readonly sessions: Gauge;
  readonly partitions: Gauge;
  readonly partitionChanges: Counter;
  readonly runDeadlines: Counter;

  private constructor(registry: Registry) {
    const registers = [registry];
    this.rejectedEvents = rejectedEventsCounter(registry);
    this.protocolErrors = new Counter({
      name: "os_protocol_errors_total",
      help: "Results whose id came back with different content or membership",
      labelNames: ["code"],
      registers,
    });
    this.protocolErrors.inc({ code: "RESULT_CONTENT_CHANGED" }, 0);
    this.events = new Counter({
      name: "os_router_frames_total",
      help: "Harness frames handled by the router",
      labelNames: ["kind", "verdict"],
      registers,
    });
    this.receiptConflicts = new Counter({
      name: "os_receipt_conflicts_total",
      help: "Receipts that named another delivery or instance than the run already bound",
      labelNames: ["source"],
      registers,
    });
    this.sends = new Counter({
      name: "os_harness_sends_total",
      help: "turn.send / turn.stop requests by answer",
      labelNames: ["operation", "answer"],
      registers,
    });
    this.runDeadlines = new Counter({
      name: "os_run_deadlines_total",
      help: "Pending runs the router ended unknown at their deadline, by reason",
      labelNames: ["reason"],
      registers,
    });
    for (const reason of Object.values(OS_END_REASONS)) this.runDeadlines.inc({ reason }, 0);
    this.partitions = new Gauge({
      name: "os_router_partitions",
      help: "Work partitions this router replica holds the lease of",
      registers,
    });
    this.partitionChanges = new Counter({
      name: "os_router_partition_changes_total",
      help: "Partition leases this router replica acquired, released (handed over) or lost",
      labelNames: ["change"],
      registers,
    });
    this.sessions = new Gauge({
      name: "os_router_sessions",
      help: "Device Harness sessions this router replica holds",
      registers,
    });
  }
}
