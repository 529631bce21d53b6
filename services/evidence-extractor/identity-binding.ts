import { z } from "zod";
import { sha256Hex } from "../../libs/contract/canonical-json.js";
import { correlationKindSchema, engineKindSchema, type EngineKind } from "../../libs/contract/engine.js";

export const appEntityKindSchema = z.enum([
  "provider_thread",
  "provider_turn",
  "node",
  "item",
  "request",
  "message",
]);
export type AppEntityKind = z.infer<typeof appEntityKindSchema>;

/**
 * Seed 004 mapping row: "this native thing corresponds to this app thing". App ids are primary and deterministic
 * (derived from the native scope, scoped ordinals, or our own delivery ids); provider ids are refs with their scope
 * and correlation strength. Stored rows are read back through this schema.
 */
export const identityBindingSchema = z.object({
  id: z.string(),
  appEntityKind: appEntityKindSchema,
  appEntityId: z.string(),
  provider: engineKindSchema,
  /** App id of the live provider connection that wrote the row (our runtimeId). */
  providerSessionId: z.string(),
  nativeKind: z.string().nullable(),
  nativeRef: z.string().nullable(),
  scope: z.object({
    threadId: z.string(),
    runId: z.null(),
    parentNodeId: z.string().nullable(),
    providerThreadId: z.string().nullable(),
    providerTurnId: z.string().nullable(),
  }),
  correlation: correlationKindSchema,
  firstRawEventId: z.string(),
  createdAt: z.string(),
  updatedAt: z.string(),
});
export type IdentityBinding = z.infer<typeof identityBindingSchema>;

/**
 * A mapping-store row as stored: the binding as a JSON array in this order, without what its place already says
 * (the agent is the store's, `id` is `providerSessionId|appEntityKind|appEntityId`, `runId` is always null and a
 * row is written once, so `updatedAt` is its `createdAt`). Half the bytes of the object form.
 */
const storedBindingRowSchema = z
  .tuple([
    appEntityKindSchema,
    z.string(),
    engineKindSchema,
    z.string(),
    z.string().nullable(),
    z.string().nullable(),
    z.string().nullable(),
    z.string().nullable(),
    z.string().nullable(),
    correlationKindSchema,
    z.string(),
    z.number().int().nonnegative(),
  ])
  .readonly();

/** The stored row of a binding (see storedBindingRowSchema). */
export function encodeBindingRow(binding: IdentityBinding): string {
  const row: z.infer<typeof storedBindingRowSchema> = [
    binding.appEntityKind,
    binding.appEntityId,
    binding.provider,
    binding.providerSessionId,
    binding.nativeKind,
    binding.nativeRef,
    binding.scope.parentNodeId,
    binding.scope.providerThreadId,
    binding.scope.providerTurnId,
    binding.correlation,
    binding.firstRawEventId,
    Date.parse(binding.createdAt),
  ];
  return JSON.stringify(row);
}

/** The binding a stored row of `agentId`'s mapping store holds. */
export function decodeBindingRow(agentId: string, json: string): IdentityBinding {
  const [
    kind,
    appEntityId,
    provider,
    providerSessionId,
    nativeKind,
    nativeRef,
    parentNodeId,
    providerThreadId,
    providerTurnId,
    correlation,
    firstRawEventId,
    createdAtMs,
  ] = storedBindingRowSchema.parse(JSON.parse(json));
  const at = new Date(createdAtMs).toISOString();
  return identityBindingSchema.parse({
    id: `${providerSessionId}|${kind}|${appEntityId}`,
    appEntityKind: kind,
    appEntityId,
    provider,
    providerSessionId,
    nativeKind,
    nativeRef,
    scope: { threadId: agentId, runId: null, parentNodeId, providerThreadId, providerTurnId },
    correlation,
    firstRawEventId,
    createdAt: at,
    updatedAt: at,
  });
}

/** A native entity inside the scope that makes its id unambiguous (seed 004 "preferred matching keys"). */
export interface NativeScope {
  appEntityKind: AppEntityKind;
  provider: EngineKind;
  /** App id of the enclosing entity (thread of a turn, turn of an item); null for a thread (the agent scopes it). */
  within: string | null;
  nativeRef: string;
}

/**
 * Field of the agent-wide mapping store: every runtime that sees the same native entity lands on the same row. The
 * scope path is hashed (96 bits) so the field stays short however long the ids in it are.
 */
export function nativeScopeKey(scope: NativeScope): string {
  return scopeField([scope.appEntityKind, scope.provider, scope.within, scope.nativeRef]);
}

/**
 * Where a binding is found across runtimes. Entities without a native id (ordinal turns) and our own messages
 * (deliveryId) are their app id's row: the app id already carries its scope.
 */
export function bindingScopeKey(binding: IdentityBinding): string {
  if (binding.nativeRef === null || binding.appEntityKind === "message")
    return scopeField([binding.appEntityKind, binding.appEntityId]);
  return nativeScopeKey({
    appEntityKind: binding.appEntityKind,
    provider: binding.provider,
    within: enclosingScope(binding),
    nativeRef: binding.nativeRef,
  });
}

function scopeField(scopePath: readonly (string | null)[]): string {
  return sha256Hex(JSON.stringify(scopePath)).slice(0, 24);
}

function enclosingScope(binding: IdentityBinding): string | null {
  switch (binding.appEntityKind) {
    case "provider_thread":
      return null;
    case "provider_turn":
    case "node":
      return binding.scope.providerThreadId;
    case "item":
      return binding.scope.providerTurnId;
    case "request":
      // JSON-RPC request ids restart with every connection: without a turn the connection is the scope.
      return binding.scope.providerTurnId ?? binding.providerSessionId;
    case "message":
      return null;
  }
}

/** Short id kinds of app ids derived from a native scope. */
export type DerivedIdKind = "thread" | "turn" | "node" | "item" | "request";

/**
 * App id of a native entity, derived from its scope path (agent, provider, enclosing app id, native id): every
 * runtime that sees the same native thread, turn or item derives the same app id, without reading anything.
 */
export function derivedAppId(kind: DerivedIdKind, scopePath: readonly string[]): string {
  return `${kind}:${sha256Hex(JSON.stringify(scopePath)).slice(0, 32)}`;
}

/** App id of a provider thread (Claude session, Codex thread): agent + provider + native id. */
export function threadAppId(agentId: string, provider: EngineKind, nativeThreadId: string): string {
  return derivedAppId("thread", [agentId, provider, nativeThreadId]);
}

/** App id of a provider turn with a native id: within its thread, or the agent's provider when no thread is named. */
export function turnAppId(
  agentId: string,
  provider: EngineKind,
  providerThreadId: string | null,
  nativeTurnId: string,
): string {
  return derivedAppId(
    "turn",
    providerThreadId ? [providerThreadId, nativeTurnId] : [agentId, provider, nativeTurnId],
  );
}
