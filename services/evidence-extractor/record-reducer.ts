import type { EngineKind } from "../../libs/contract/engine.js";
import type { EngineRecord } from "../../libs/contract/pipeline-payloads.js";
import { claudeInbound, claudeOutbound, newClaudeStreamState } from "./adapters/claude-stream-json.js";
import { claudeTranscriptRow, newClaudeTranscriptState } from "./adapters/claude-transcript.js";
import { codexInbound, codexOutbound, newCodexAppServerState } from "./adapters/codex-app-server.js";
import { codexRolloutRow, newCodexRolloutState } from "./adapters/codex-rollout.js";
import { promptFingerprint } from "./adapters/fingerprint.js";
import { exitReason } from "./engine-requests.js";
import { enforceInputCap } from "./membership.js";
import {
  newRuntimeState,
  type EvidenceLimits,
  type FormatState,
  type OpenInput,
  type RuntimeState,
} from "./runtime-state.js";
import { StepOutput } from "./step-output.js";

type Body<T extends EngineRecord["record"]["type"]> = Extract<EngineRecord["record"], { type: T }>;

export function initialState(record: EngineRecord): RuntimeState {
  return newRuntimeState(record, newFormatState(record.engine));
}

function newFormatState(engine: EngineKind): FormatState {
  switch (engine) {
    case "claude-stream-json":
      return newClaudeStreamState();
    case "codex-app-server":
      return newCodexAppServerState();
    case "claude-transcript":
      return newClaudeTranscriptState();
    case "codex-rollout":
      return newCodexRolloutState();
  }
}

/**
 * Applies one record of a runtime to its state (which it mutates) and returns what it produced. Pure apart from
 * that: no I/O, no clock, no randomness, so the same records always give byte-identical evidence and bindings.
 */
export function applyRecord(
  state: RuntimeState,
  record: EngineRecord,
  limits: EvidenceLimits,
  step = new StepOutput(record),
): StepOutput {
  if (state.closed) {
    step.ignore("runtime_closed");
    return step;
  }
  const body = record.record;
  switch (body.type) {
    case "runtime_started":
      break;
    case "outbound":
      outbound(state, record, body, limits, step);
      break;
    case "handed_over":
      handedOver(state, record, body, limits, step);
      break;
    case "undeliverable":
      undeliverable(state, body, step);
      break;
    case "withdrawn":
      withdrawn(state, body, step);
      break;
    case "inbound":
      inbound(state, record, body.raw, limits, step);
      break;
    case "runtime_exited":
      closeRuntime(state, step);
      break;
  }
  return step;
}

/** The runtime is gone (exit, or superseded by a new runtime of the agent): whatever is open ends unknown. */
export function closeRuntime(state: RuntimeState, step: StepOutput): void {
  step.missing(state, state.inputs, exitReason(state));
  state.inputs = [];
  state.closed = true;
}

function openInput(record: EngineRecord, ref: Omit<OpenInput, "seq" | "at">): OpenInput {
  return { ...ref, seq: record.seq, at: record.receivedAt };
}

function outbound(
  state: RuntimeState,
  record: EngineRecord,
  body: Body<"outbound">,
  limits: EvidenceLimits,
  step: StepOutput,
): void {
  const format = state.format;
  const written = body.input;
  const input = written
    ? openInput(record, {
        deliveryId: written.deliveryId,
        deviceId: written.deviceId,
        idempotencyKey: written.idempotencyKey,
        kind: written.kind,
        ...(written.text === undefined ? {} : { text: written.text }),
      })
    : undefined;
  // A re-send of an open input (Codex steer refused -> turn/start) keeps the one open input and its history.
  const known = input && state.inputs.find((candidate) => candidate.deliveryId === input.deliveryId);
  const current = known ?? input;
  if (input && written && !known) {
    state.inputs.push(input);
    step.delivered(state, input, written.mode);
  }
  if (format.kind === "claude-stream-json") claudeOutbound(state, format, current, body.raw);
  if (format.kind === "codex-app-server") codexOutbound(state, format, body.raw, current, limits, step);
  enforceInputCap(state, step, limits.maxOpenInputs);
}

function handedOver(
  state: RuntimeState,
  record: EngineRecord,
  body: Body<"handed_over">,
  limits: EvidenceLimits,
  step: StepOutput,
): void {
  if (state.inputs.some((known) => known.deliveryId === body.deliveryId)) return;
  const input = openInput(record, {
    deliveryId: body.deliveryId,
    deviceId: body.deviceId,
    idempotencyKey: body.idempotencyKey,
    kind: "input",
    text: body.text,
    fingerprint: promptFingerprint(body.text),
  });
  state.inputs.push(input);
  step.delivered(state, input, body.mode);
  enforceInputCap(state, step, limits.maxOpenInputs);
}

function undeliverable(state: RuntimeState, body: Body<"undeliverable">, step: StepOutput): void {
  state.inputs = state.inputs.filter((input) => input.deliveryId !== body.deliveryId);
  step.rejected(state, body, body.reason, body.code);
}

/** Inputs that waited in the runner were never written: each ends rejected, and the stop that withdrew them is done. */
function withdrawn(state: RuntimeState, body: Body<"withdrawn">, step: StepOutput): void {
  for (const input of body.inputs)
    step.rejected(state, input, "stopped by its device before the engine took it", "INPUT_WITHDRAWN");
  step.stopConfirmed(state, body.stop);
}

function inbound(
  state: RuntimeState,
  record: EngineRecord,
  raw: string,
  limits: EvidenceLimits,
  step: StepOutput,
): void {
  const format = state.format;
  switch (format.kind) {
    case "claude-stream-json":
      return claudeInbound(state, format, raw, step);
    case "codex-app-server":
      return codexInbound(state, format, raw, limits, step);
    case "claude-transcript":
      return claudeTranscriptRow(state, format, raw, { seq: record.seq, limits, step });
    case "codex-rollout":
      return codexRolloutRow(state, format, raw, { seq: record.seq, limits, step });
  }
}
