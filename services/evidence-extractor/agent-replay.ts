import type { EngineRecord, HarnessEvidence } from "../../libs/contract/pipeline-payloads.js";
import { EntryNotReadyError } from "../../libs/streams/entry-not-ready.js";
import type { IdentityBinding } from "./identity-binding.js";
import { applyRecord, closeRuntime, initialState } from "./record-reducer.js";
import type { EvidenceLimits, RuntimeState } from "./runtime-state.js";
import { StepOutput } from "./step-output.js";

/** A record whose runtime has not applied its predecessor yet: the stream consumer leaves it pending for later. */
export class RecordOutOfOrderError extends EntryNotReadyError {
  constructor(record: EngineRecord, applied: number) {
    super(
      "RECORD_OUT_OF_ORDER",
      `runtime ${record.runtimeId}: seq ${record.seq} arrived before seq ${applied + 1}`,
    );
  }
}

/**
 * A new runtime of an agent supersedes the agent's runtimes that never reported their exit: their open inputs end
 * ENGINE_EXITED (never completed). Evidence ids come from the record that started the new runtime.
 */
export function supersede(previous: RuntimeState, step: StepOutput): void {
  closeRuntime(previous, step);
}

/**
 * The extractor without Redis: one agent's runtimes in memory, records applied in seq order per runtime. Used by
 * replay tests and benchmarks; the service wraps the same reducer with Redis-persisted state.
 */
export class AgentEvidenceReplay {
  readonly evidence: HarnessEvidence[] = [];
  readonly bindings: IdentityBinding[] = [];
  private readonly runtimes = new Map<string, RuntimeState>();

  constructor(private readonly limits: EvidenceLimits) {}

  apply(record: EngineRecord): StepOutput {
    const state = this.runtimes.get(record.runtimeId) ?? initialState(record);
    const step = new StepOutput(record);
    if (record.seq <= state.appliedSeq) return step;
    if (record.seq !== state.appliedSeq + 1) throw new RecordOutOfOrderError(record, state.appliedSeq);
    if (record.record.type === "runtime_started")
      for (const other of this.openRuntimesOf(record)) supersede(other, step);
    applyRecord(state, record, this.limits, step);
    state.appliedSeq = record.seq;
    this.runtimes.set(record.runtimeId, state);
    this.evidence.push(...step.evidence);
    this.bindings.push(...step.bindings);
    return step;
  }

  state(runtimeId: string): RuntimeState | undefined {
    return this.runtimes.get(runtimeId);
  }

  private openRuntimesOf(record: EngineRecord): RuntimeState[] {
    return [...this.runtimes.values()]
      .filter(
        (other) => other.agentId === record.agentId && other.runtimeId !== record.runtimeId && !other.closed,
      )
      .sort((a, b) => (a.runtimeId < b.runtimeId ? -1 : 1));
  }
}
