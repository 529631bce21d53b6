import type { CorrelationKind } from "../../libs/contract/engine.js";
import type { EngineRecord, HarnessEvidence } from "../../libs/contract/pipeline-payloads.js";
import type { Outcome } from "../../libs/contract/turn-result.js";
import type { IdentityBinding } from "./identity-binding.js";
import type { OpenInput, RuntimeState } from "./runtime-state.js";

type InputRef = Pick<OpenInput, "deliveryId" | "deviceId" | "idempotencyKey">;

export type MissingReason = Extract<HarnessEvidence, { kind: "evidence.missing" }>["reason"];

export interface BindingDraft {
  appEntityKind: IdentityBinding["appEntityKind"];
  appEntityId: string;
  nativeKind: string | null;
  nativeRef: string | null;
  parentNodeId?: string | null;
  providerThreadId?: string | null;
  providerTurnId?: string | null;
  correlation: CorrelationKind;
}

export interface CompletedTurn {
  members: { input: OpenInput; correlation: CorrelationKind }[];
  outcome: Outcome;
  fullText: string;
  engineTurnId?: string;
}

/**
 * What one record produced: evidence entries with deterministic ids (`<runtimeId>:<seq>:<kind>:<n>`, from the record
 * that caused them) and the identity bindings they depend on. Same state + same record => byte-identical output.
 */
export class StepOutput {
  readonly evidence: HarnessEvidence[] = [];
  readonly bindings: IdentityBinding[] = [];
  /** Frames or rows that were not usable, by reason (counted by the service, never silently dropped). */
  readonly ignored = new Map<string, number>();

  constructor(readonly record: EngineRecord) {}

  ignore(reason: string): void {
    this.ignored.set(reason, (this.ignored.get(reason) ?? 0) + 1);
  }

  delivered(
    state: RuntimeState,
    input: OpenInput,
    mode: Extract<HarnessEvidence, { kind: "input.delivered" }>["mode"],
  ): void {
    this.push({ kind: "input.delivered", ...this.base(state, "input.delivered"), ...ref(input), mode });
  }

  /** First consumption proof of an input; later, stronger proofs only upgrade the state. */
  consumed(
    state: RuntimeState,
    input: OpenInput,
    correlation: CorrelationKind,
    engineTurnRef?: string,
  ): void {
    if (input.consumed) {
      if (correlation === "native_exact") input.consumed = correlation;
      return;
    }
    input.consumed = correlation;
    this.push({
      kind: "input.consumed",
      ...this.base(state, "input.consumed"),
      ...ref(input),
      correlation,
      ...(engineTurnRef ? { engineTurnRef } : {}),
    });
  }

  completed(state: RuntimeState, turn: CompletedTurn): void {
    this.push({
      kind: "turn.completed",
      ...this.base(state, "turn.completed"),
      ...(turn.engineTurnId ? { engineTurnId: turn.engineTurnId } : {}),
      outcome: turn.outcome,
      fullText: turn.fullText,
      members: turn.members.map(({ input, correlation }) => ({ ...ref(input), correlation })),
    });
  }

  /** Marks the inputs `unknown` once; inputs already reported are skipped. */
  missing(state: RuntimeState, inputs: OpenInput[], reason: MissingReason): void {
    const fresh = inputs.filter((input) => !input.missing);
    if (fresh.length === 0) return;
    for (const input of fresh) input.missing = true;
    this.push({
      kind: "evidence.missing",
      ...this.base(state, "evidence.missing"),
      members: fresh.map(ref),
      reason,
    });
  }

  rejected(state: RuntimeState, input: InputRef, reason: string, code?: string): void {
    this.push({
      kind: "input.rejected",
      ...this.base(state, "input.rejected"),
      ...ref(input),
      reason,
      ...(code === undefined ? {} : { code }),
    });
  }

  stopConfirmed(state: RuntimeState, stop: InputRef): void {
    this.push({ kind: "stop.confirmed", ...this.base(state, "stop.confirmed"), ...ref(stop) });
  }

  bind(state: RuntimeState, draft: BindingDraft): void {
    const at = new Date(this.record.receivedAt).toISOString();
    this.bindings.push({
      id: `${state.runtimeId}|${draft.appEntityKind}|${draft.appEntityId}`,
      appEntityKind: draft.appEntityKind,
      appEntityId: draft.appEntityId,
      provider: state.engine,
      providerSessionId: state.runtimeId,
      nativeKind: draft.nativeKind,
      nativeRef: draft.nativeRef,
      scope: {
        threadId: state.agentId,
        runId: null,
        parentNodeId: draft.parentNodeId ?? null,
        providerThreadId: draft.providerThreadId ?? null,
        providerTurnId: draft.providerTurnId ?? null,
      },
      correlation: draft.correlation,
      firstRawEventId: `${this.record.runtimeId}:${this.record.seq}`,
      createdAt: at,
      updatedAt: at,
    });
  }

  private push(entry: HarnessEvidence): void {
    this.evidence.push(entry);
  }

  private base(state: RuntimeState, kind: HarnessEvidence["kind"]) {
    return {
      agentId: state.agentId,
      machineId: state.machineId,
      runtimeId: state.runtimeId,
      evidenceId: `${this.record.runtimeId}:${this.record.seq}:${kind}:${this.evidence.length}`,
      observedAt: this.record.receivedAt,
    };
  }
}

function ref(input: InputRef) {
  return { deliveryId: input.deliveryId, deviceId: input.deviceId, idempotencyKey: input.idempotencyKey };
}
