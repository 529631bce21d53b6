import { Counter, type Registry } from "prom-client";
import { perRegistry } from "../../libs/metrics/per-registry.js";

/** The runner's own counters; records appended are labelled by agent and by what kind of record they are. */
export class RunnerMetrics {
  readonly recordsAppended: Counter<"agent" | "direction">;
  readonly engineRestarts: Counter<"agent">;
  readonly inputsWritten: Counter<"agent" | "kind" | "mode">;
  readonly dispatchIgnored: Counter<"reason">;
  readonly dispatchSkipped: Counter<"agent" | "reason">;
  readonly undeliverable: Counter<"agent" | "reason">;
  readonly inputsWaiting: Counter<"agent">;
  readonly stops: Counter<"agent" | "action">;
  readonly requestsAnswered: Counter<"agent" | "kind" | "decision">;

  private constructor(registry: Registry) {
    this.recordsAppended = new Counter({
      name: "engine_records_appended_total",
      help: "Records appended to engine.records, by agent and direction (inbound, outbound, handed_over, undeliverable, lifecycle).",
      labelNames: ["agent", "direction"],
      registers: [registry],
    });
    this.engineRestarts = new Counter({
      name: "engine_runtime_restarts_total",
      help: "Engine processes started again after their previous runtime ended.",
      labelNames: ["agent"],
      registers: [registry],
    });
    this.inputsWritten = new Counter({
      name: "engine_inputs_written_total",
      help: "Inputs and stops written to an engine's stdin (or handed over to a transcript-tail agent).",
      labelNames: ["agent", "kind", "mode"],
      registers: [registry],
    });
    this.dispatchIgnored = new Counter({
      name: "engine_runner_dispatch_ignored_total",
      help: "harness.dispatch entries acked without action because this runner does not host the agent.",
      labelNames: ["reason"],
      registers: [registry],
    });
    this.dispatchSkipped = new Counter({
      name: "engine_runner_dispatch_skipped_total",
      help: "Redelivered dispatches not written again because their delivery marker shows they were recorded.",
      labelNames: ["agent", "reason"],
      registers: [registry],
    });
    this.undeliverable = new Counter({
      name: "engine_runner_undeliverable_total",
      help: "Dispatches recorded as undeliverable (proven never handed to the engine).",
      labelNames: ["agent", "reason"],
      registers: [registry],
    });
    this.inputsWaiting = new Counter({
      name: "engine_runner_inputs_waiting_total",
      help: "Inputs held in the runner because the running turn holds another device's input (written when it ends).",
      labelNames: ["agent"],
      registers: [registry],
    });
    this.stops = new Counter({
      name: "engine_runner_stops_total",
      help: "turn.stop dispatches by what they did: interrupt the engine, withdraw waiting inputs, or refuse.",
      labelNames: ["agent", "action"],
      registers: [registry],
    });
    this.requestsAnswered = new Counter({
      name: "engine_requests_answered_total",
      help: "Engine requests answered by the runner: approvals by the agent's policy (allow/deny), the rest unanswerable.",
      labelNames: ["agent", "kind", "decision"],
      registers: [registry],
    });
  }

  static readonly of = perRegistry((registry) => new RunnerMetrics(registry));

  /** The hosted agents' records, restarts and undeliverable inputs exist at 0 from start. */
  initialiseAgents(agentIds: readonly string[]): void {
    for (const agent of agentIds) {
      for (const direction of ["inbound", "outbound", "handed_over", "undeliverable", "lifecycle"])
        this.recordsAppended.inc({ agent, direction }, 0);
      this.engineRestarts.inc({ agent }, 0);
      this.inputsWaiting.inc({ agent }, 0);
    }
  }
}
