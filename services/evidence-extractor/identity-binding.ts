import type { CorrelationKind, EngineKind } from "../../libs/contract/engine.js";

/**
 * Seed 004 mapping row: "this native thing corresponds to this app thing". App ids are primary and deterministic
 * (scoped ordinals or our own delivery ids); provider ids are refs with their scope and correlation strength.
 */
export interface IdentityBinding {
  id: string;
  appEntityKind: "provider_thread" | "provider_turn" | "node" | "message";
  appEntityId: string;
  provider: EngineKind;
  /** App id of the provider runtime session (our runtimeId). */
  providerSessionId: string;
  nativeKind: string | null;
  nativeRef: string | null;
  scope: {
    threadId: string;
    runId: null;
    parentNodeId: string | null;
    providerThreadId: string | null;
    providerTurnId: string | null;
  };
  correlation: CorrelationKind;
  firstRawEventId: string;
  createdAt: string;
  updatedAt: string;
}

/** Field under which a binding is stored: one row per app entity, so reprocessing finds the existing one. */
export function bindingField(binding: IdentityBinding): string {
  return `${binding.appEntityKind}|${binding.appEntityId}`;
}
