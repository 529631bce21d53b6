import { RecentMap } from "../../libs/collections/recent-map.js";
import type { EngineRecord, EngineRecordEntry } from "../../libs/contract/pipeline-payloads.js";
import type { EvidenceStore, LoadedRuntime } from "./evidence-store.js";
import type { ExtractorMetrics } from "./extractor-metrics.js";
import { applyRecord, initialState } from "./record-reducer.js";
import type { EvidenceLimits, RuntimeState } from "./runtime-state.js";
import { StepOutput } from "./step-output.js";

export interface RecordBatchOptions {
  store: EvidenceStore;
  limits: EvidenceLimits;
  metrics: ExtractorMetrics;
}

interface Delivered {
  id: string;
  payload: EngineRecord;
}

/** One runtime's records of a read batch, reduced in memory from its stored state. */
interface RuntimeRun<T extends Delivered> {
  expectedSeq: number;
  state: RuntimeState | undefined;
  steps: StepOutput[];
  applied: T[];
  redelivered: T[];
  undone: T[];
}

/**
 * The batch path of the extractor: a read batch grouped by runtime costs one state load, one bindings script, one
 * evidence MULTI and one state CAS per runtime instead of per record, with the same order of effects as
 * RecordProcessor (bindings -> evidence -> CAS from the loaded seq). A crash before the CAS leaves the state at the
 * loaded seq, so redelivery recomputes byte-identical bindings and evidence from there. Everything this path does
 * not prove safe is returned undone for the per-record path: records after a seq gap (they wait there for their
 * predecessor), `runtime_started` and every later record of that agent in the batch (superseding other runtimes
 * must see them exactly as stream order left them), and a runtime whose CAS lost to another consumer.
 */
export class RecordBatch {
  /**
   * Each runtime's state as this consumer last advanced it (runtime → seq and state), so its next batch
   * need not read it back: the CAS on the applied seq still guards it, and a runtime another consumer moved on
   * fails that CAS, is forgotten here and goes through the per-record path, which reads the store.
   */
  private readonly advanced = new RecentMap<string, LoadedRuntime>(RUNTIMES_REMEMBERED);

  constructor(private readonly options: RecordBatchOptions) {}

  /**
   * A read batch of engine.records entries: their records in stream order through `process`. Returns the entries
   * left for the per-record path (any of whose records was left undone); every other entry is durable.
   */
  async processEntries<E extends { id: string; payload: EngineRecordEntry }>(entries: E[]): Promise<E[]> {
    const records = entries.flatMap((entry) =>
      entry.payload.records.map((payload) => ({ entry, id: entry.id, payload })),
    );
    const undone = new Set((await this.process(records)).map(({ entry }) => entry));
    return entries.filter((entry) => undone.has(entry));
  }

  /** Returns the records left for the per-record path; every other record is durable. */
  async process<T extends Delivered>(entries: T[]): Promise<T[]> {
    const undone = new Set<T>();
    const groups = new Map<string, T[]>();
    const supersedingAgents = new Set<string>();
    for (const entry of entries) {
      const record = entry.payload;
      if (record.record.type === "runtime_started") supersedingAgents.add(record.agentId);
      if (supersedingAgents.has(record.agentId)) {
        undone.add(entry);
        continue;
      }
      const key = runtimeKey(record);
      const group = groups.get(key);
      if (group) group.push(entry);
      else groups.set(key, [entry]);
    }
    const runs = await Promise.all([...groups.values()].map((group) => this.reduce(group)));
    const persisted = await Promise.allSettled(runs.map((run) => this.persist(run)));
    const failure = persisted.find((outcome) => outcome.status === "rejected");
    if (failure) throw failure.reason;
    for (const run of runs) for (const entry of run.undone) undone.add(entry);
    return entries.filter((entry) => undone.has(entry));
  }

  private async reduce<T extends Delivered>(group: T[]): Promise<RuntimeRun<T>> {
    const first = (group[0] as T).payload;
    const loaded = await this.loadFor(first, Math.min(...group.map((entry) => entry.payload.seq)));
    const run: RuntimeRun<T> = {
      expectedSeq: loaded.seq,
      state: loaded.state,
      steps: [],
      applied: [],
      redelivered: [],
      undone: [],
    };
    let appliedSeq = loaded.seq;
    for (const entry of [...group].sort((a, b) => a.payload.seq - b.payload.seq)) {
      const record = entry.payload;
      if (record.seq <= appliedSeq) run.redelivered.push(entry);
      else if (record.seq !== appliedSeq + 1) run.undone.push(entry);
      else {
        run.state ??= initialState(record);
        const step = new StepOutput(record);
        applyRecord(run.state, record, this.options.limits, step);
        run.state.appliedSeq = record.seq;
        appliedSeq = record.seq;
        run.steps.push(step);
        run.applied.push(entry);
      }
    }
    return run;
  }

  private async persist<T extends Delivered>(run: RuntimeRun<T>): Promise<void> {
    const { store, metrics } = this.options;
    for (const { payload } of run.redelivered)
      metrics.records.inc({ engine: payload.engine, status: "redelivered" });
    if (!run.state || run.applied.length === 0) return;
    const bindings = run.steps.flatMap((step) => step.bindings);
    const conflicts = await store.persistBindings(run.state.agentId, bindings);
    if (conflicts > 0) metrics.bindingConflicts.inc(conflicts);
    await store.emit(run.steps.flatMap((step) => step.evidence));
    const key = runtimeKey(run.state);
    if (!(await store.advance(run.state, run.expectedSeq))) {
      this.advanced.delete(key);
      run.undone.push(...run.applied);
      return;
    }
    // Kept as is: nothing touches a run's state once persisted, and `loadFor` hands out copies.
    this.advanced.set(key, { seq: run.state.appliedSeq, state: run.state });
    for (const step of run.steps) {
      const engine = step.record.engine;
      metrics.records.inc({ engine, status: "applied" });
      for (const entry of step.evidence) metrics.evidence.inc({ kind: entry.kind });
      for (const [reason, count] of step.ignored) metrics.ignored.inc({ engine, reason }, count);
    }
  }

  /**
   * The runtime's state: a copy of what this consumer last advanced it to, unless the batch starts past it (the
   * per-record path or another consumer moved the runtime on meanwhile), in which case the store is read.
   */
  private async loadFor(record: EngineRecord, firstSeq: number): Promise<LoadedRuntime> {
    const key = runtimeKey(record);
    const remembered = this.advanced.get(key);
    if (remembered?.state !== undefined && firstSeq <= remembered.seq + 1)
      return { seq: remembered.seq, state: structuredClone(remembered.state) };
    this.advanced.delete(key);
    return this.options.store.load(record.agentId, record.runtimeId);
  }
}

/** Runtimes whose last advanced state a consumer keeps (the most recently advanced ones). */
const RUNTIMES_REMEMBERED = 1_024;

const runtimeKey = (runtime: { agentId: string; runtimeId: string }) =>
  JSON.stringify([runtime.agentId, runtime.runtimeId]);
