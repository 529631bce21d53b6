import type { EngineRecord } from "../../libs/contract/pipeline-payloads.js";
import { RecordOutOfOrderError, supersede } from "./agent-replay.js";
import type { EvidenceStore, LoadedRuntime } from "./evidence-store.js";
import type { ExtractorMetrics } from "./extractor-metrics.js";
import { applyRecord, initialState } from "./record-reducer.js";
import type { EvidenceLimits, RuntimeState } from "./runtime-state.js";
import { StepOutput } from "./step-output.js";

export interface RecordProcessorOptions {
  store: EvidenceStore;
  limits: EvidenceLimits;
  /** How long a record waits for its predecessor (another consumer may hold it) before failing for a retry. */
  orderWaitMs: number;
  metrics: ExtractorMetrics;
}

/**
 * Applies engine.records to Redis-persisted runtime state, one runtime strictly in seq order even with several
 * consumers. Order of effects per record: bindings (HSETNX) -> evidence (one MULTI of XADDs) -> state (CAS on the
 * applied seq). A crash anywhere before the CAS leaves the state at seq-1, so the redelivered record recomputes
 * byte-identical bindings and evidence (same ids); the result-producer dedupes evidence by evidenceId.
 */
export class RecordProcessor {
  constructor(private readonly options: RecordProcessorOptions) {}

  async process(record: EngineRecord): Promise<void> {
    const { store, limits, metrics } = this.options;
    const loaded = await this.awaitTurn(record);
    if (!loaded) {
      metrics.records.inc({ engine: record.engine, status: "redelivered" });
      return;
    }
    const state = loaded.state ?? initialState(record);
    const step = new StepOutput(record);
    const superseded =
      record.record.type === "runtime_started" ? await this.supersedeOthers(record, step) : [];
    applyRecord(state, record, limits, step);
    state.appliedSeq = record.seq;

    const conflicts = await store.persistBindings(record.agentId, step.bindings);
    if (conflicts > 0) metrics.bindingConflicts.inc(conflicts);
    await store.emit(step.evidence);
    for (const previous of superseded)
      if (!(await store.advance(previous, previous.appliedSeq)))
        metrics.records.inc({ engine: record.engine, status: "superseded_race" });
    const advanced = await store.advance(state, loaded.seq);
    metrics.records.inc({ engine: record.engine, status: advanced ? "applied" : "redelivered" });
    for (const entry of step.evidence) metrics.evidence.inc({ kind: entry.kind });
    for (const [reason, count] of step.ignored) metrics.ignored.inc({ engine: record.engine, reason }, count);
  }

  /**
   * A record that was given up on (dead-lettered): its runtime carries on after it, and the inputs open for the
   * runtime end `unknown` / EVIDENCE_LOST, since what the record proved about them is gone. A record past a gap takes
   * the records before it with it (they were not applied in time); one already applied changes nothing. Idempotent:
   * evidence ids come from the record, and the CAS on the applied seq lets one writer through.
   */
  async abandon(record: EngineRecord): Promise<void> {
    const { store, metrics } = this.options;
    for (;;) {
      const loaded = await store.load(record.agentId, record.runtimeId);
      if (record.seq <= loaded.seq) return;
      const state = loaded.state ?? initialState(record);
      const step = new StepOutput(record);
      step.missing(state, state.inputs, "EVIDENCE_LOST");
      state.appliedSeq = record.seq;
      await store.emit(step.evidence);
      if (await store.advance(state, loaded.seq)) {
        metrics.records.inc({ engine: record.engine, status: "lost" });
        for (const entry of step.evidence) metrics.evidence.inc({ kind: entry.kind });
        return;
      }
    }
  }

  /** Resolves with the runtime's state when this record is next, null when it was applied already. */
  private async awaitTurn(record: EngineRecord): Promise<LoadedRuntime | null> {
    const deadline = Date.now() + this.options.orderWaitMs;
    for (;;) {
      const loaded = await this.options.store.load(record.agentId, record.runtimeId);
      if (record.seq <= loaded.seq) return null;
      if (record.seq === loaded.seq + 1) return loaded;
      if (Date.now() >= deadline) {
        this.options.metrics.records.inc({ engine: record.engine, status: "out_of_order" });
        throw new RecordOutOfOrderError(record, loaded.seq);
      }
      await new Promise((resolve) => setTimeout(resolve, 20));
    }
  }

  /** Open runtimes of the agent other than this one: their open inputs end ENGINE_EXITED. */
  private async supersedeOthers(record: EngineRecord, step: StepOutput): Promise<RuntimeState[]> {
    const closed: RuntimeState[] = [];
    for (const runtimeId of await this.options.store.openRuntimes(record.agentId)) {
      if (runtimeId === record.runtimeId) continue;
      const previous = (await this.options.store.load(record.agentId, runtimeId)).state;
      if (!previous || previous.closed) continue;
      supersede(previous, step);
      closed.push(previous);
    }
    return closed;
  }
}
