import type { CorrelationKind } from "../../libs/contract/engine.js";
import type { Outcome } from "../../libs/contract/turn-result.js";
import { removeInputs, type OpenInput, type RuntimeState } from "./runtime-state.js";
import type { StepOutput } from "./step-output.js";

export interface ProvenMember {
  input: OpenInput;
  correlation: CorrelationKind;
  /** Native id of the engine message that carried the input, when the engine gave one. */
  nativeRef?: string;
}

export interface Boundary {
  appTurnId: string;
  engineTurnId?: string;
  providerThreadId?: string | null;
  outcome: Outcome;
  fullText: string;
  members: ProvenMember[];
}

/**
 * A real completion boundary with at least one proven member: bindings first (they are persisted before the
 * evidence that depends on them), then consumption for members not reported yet, then the result; members leave
 * the open set so no later boundary can claim them. A stop still open was written before this boundary: the turn it
 * asked to stop is over, so it is done too (an engine that never answers an interrupt must not hold its receipt open).
 */
export function completeTurn(state: RuntimeState, step: StepOutput, boundary: Boundary): void {
  const members = boundary.members.map((member) => {
    step.consumed(state, member.input, member.correlation, boundary.engineTurnId);
    const correlation = strongest(member.input.consumed, member.correlation);
    step.bind(state, {
      appEntityKind: "message",
      appEntityId: member.input.deliveryId,
      nativeKind: member.nativeRef ? "message" : null,
      nativeRef: member.nativeRef ?? null,
      providerThreadId: boundary.providerThreadId ?? null,
      providerTurnId: boundary.appTurnId,
      correlation,
    });
    return { input: member.input, correlation };
  });
  step.completed(state, {
    members,
    outcome: boundary.outcome,
    fullText: boundary.fullText,
    ...(boundary.engineTurnId ? { engineTurnId: boundary.engineTurnId } : {}),
  });
  removeInputs(state, new Set(boundary.members.map((member) => member.input.deliveryId)));
  settleOpenStops(state, step);
}

function settleOpenStops(state: RuntimeState, step: StepOutput): void {
  const stops = state.inputs.filter((input) => input.kind === "stop");
  for (const stop of stops) step.stopConfirmed(state, stop);
  removeInputs(state, new Set(stops.map((stop) => stop.deliveryId)));
}

const STRENGTH: CorrelationKind[] = ["native_exact", "native_scoped", "ordinal", "fingerprint", "synthetic"];

function strongest(a: CorrelationKind | undefined, b: CorrelationKind): CorrelationKind {
  if (!a) return b;
  return STRENGTH.indexOf(a) <= STRENGTH.indexOf(b) ? a : b;
}

/** Bounded open set: past the cap the oldest inputs fail closed instead of being silently forgotten. */
export function enforceInputCap(state: RuntimeState, step: StepOutput, maxOpenInputs: number): void {
  const excess = state.inputs.length - maxOpenInputs;
  if (excess <= 0) return;
  const evicted = state.inputs.slice(0, excess);
  step.missing(state, evicted, "EVIDENCE_EVICTED");
  removeInputs(state, new Set(evicted.map((input) => input.deliveryId)));
}
