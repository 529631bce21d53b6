import type { CorrelationKind, EngineKind } from "../../libs/contract/engine.js";
import type { EngineRecord } from "../../libs/contract/pipeline-payloads.js";
import type { ClaudeStreamState } from "./adapters/claude-stream-json.js";
import type { ClaudeTranscriptState } from "./adapters/claude-transcript.js";
import type { CodexAppServerState } from "./adapters/codex-app-server.js";
import type { CodexRolloutState } from "./adapters/codex-rollout.js";

export interface EvidenceLimits {
  maxOpenInputs: number;
  maxChainRows: number;
  maxOpenTurns: number;
  clockSkewMs: number;
}

/** An input (or stop) written to / handed over to this runtime whose fate is not settled yet. */
export interface OpenInput {
  deliveryId: string;
  deviceId: string;
  idempotencyKey: string;
  kind: "input" | "stop";
  text?: string;
  /** Position of the record that wrote / handed it over; the fingerprint window starts here. */
  seq: number;
  at: number;
  /** The id we wrote into the frame (Claude `uuid`); equals deliveryId by the runner's convention. */
  nativeRef?: string;
  /** Strongest consumption proof seen so far. */
  consumed?: CorrelationKind;
  /** Native turn the input is bound to (Codex turn id, rollout turn_id). */
  turnRef?: string;
  /** Native id of the engine item / row that carried it. */
  itemRef?: string;
  /** Already reported `unknown`; never reported again, never attributed by ordinal. */
  missing?: boolean;
  fingerprint?: string;
}

export type FormatState = ClaudeStreamState | CodexAppServerState | ClaudeTranscriptState | CodexRolloutState;

/** Everything the extractor remembers about one runtime between records; JSON-serialisable and bounded. */
export interface RuntimeState {
  v: 1;
  agentId: string;
  machineId: string;
  runtimeId: string;
  engine: EngineKind;
  appliedSeq: number;
  closed: boolean;
  inputs: OpenInput[];
  /** Native ids of requests the engine made and the runner has not answered yet (engine-requests.ts). */
  pendingRequests: string[];
  /** Scoped ordinals (seed 004): deterministic app ids for threads, turns and sub-agent nodes of this runtime. */
  ordinals: { thread: number; turn: number; node: number };
  format: FormatState;
}

export function isMainInput(input: OpenInput): boolean {
  return input.kind === "input";
}

export function removeInputs(state: RuntimeState, deliveryIds: ReadonlySet<string>): void {
  state.inputs = state.inputs.filter((input) => !deliveryIds.has(input.deliveryId));
}

export function nextOrdinal(state: RuntimeState, kind: keyof RuntimeState["ordinals"]): string {
  state.ordinals[kind] += 1;
  return `${state.runtimeId}:${kind}:${state.ordinals[kind]}`;
}

export function newRuntimeState(record: EngineRecord, format: FormatState): RuntimeState {
  return {
    v: 1,
    agentId: record.agentId,
    machineId: record.machineId,
    runtimeId: record.runtimeId,
    engine: record.engine,
    appliedSeq: 0,
    closed: false,
    inputs: [],
    pendingRequests: [],
    ordinals: { thread: 0, turn: 0, node: 0 },
    format,
  };
}
