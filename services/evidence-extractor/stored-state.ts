import { z } from "zod";
import { correlationKindSchema, engineKindSchema } from "../../libs/contract/engine.js";
import type { RuntimeState } from "./runtime-state.js";

/** Persisted runtime state is read back through this schema: a corrupt or foreign value fails loudly, never half-used. */
const openInputSchema = z.object({
  deliveryId: z.string(),
  deviceId: z.string(),
  idempotencyKey: z.string(),
  kind: z.enum(["input", "stop"]),
  text: z.string().optional(),
  seq: z.number().int(),
  at: z.number(),
  nativeRef: z.string().optional(),
  consumed: correlationKindSchema.optional(),
  turnRef: z.string().optional(),
  itemRef: z.string().optional(),
  missing: z.boolean().optional(),
  fingerprint: z.string().optional(),
});

const claudeStreamSchema = z.object({
  kind: z.literal("claude-stream-json"),
  echoSeen: z.boolean(),
  ordinalBlocked: z.boolean(),
  turn: z.object({
    replyIds: z.array(z.string()).nullable(),
    startedIds: z.array(z.string()),
    replayIds: z.array(z.string()),
  }),
  interrupts: z.record(z.string(), z.string()),
  sessionRef: z.string().nullable(),
});

const codexTurnSchema = z.object({
  appId: z.string(),
  threadId: z.string(),
  root: z.boolean(),
  finalText: z.string().nullable(),
  lastText: z.string().nullable(),
});

const codexAppServerSchema = z.object({
  kind: z.literal("codex-app-server"),
  requests: z.record(
    z.string(),
    z.object({ method: z.string(), threadId: z.string().optional(), deliveryId: z.string().optional() }),
  ),
  rootThreads: z.record(z.string(), z.string()),
  childThreads: z.record(z.string(), z.string()),
  // State written before sub-agent links were kept has none: those children fall back to the active root turn.
  parents: z.record(z.string(), z.string()).default({}),
  turns: z.record(z.string(), codexTurnSchema),
  activeRootTurn: z.string().nullable(),
});

const chainRowSchema = z.object({
  p: z.string().nullable(),
  k: z.enum(["h", "q", "o"]),
  prompt: z.string().optional(),
  seq: z.number().int(),
  at: z.number(),
});

const claudeTranscriptSchema = z.object({
  kind: z.literal("claude-transcript"),
  rows: z.record(z.string(), chainRowSchema),
  rowCount: z.number().int(),
  evicted: z.boolean(),
  highWaterMs: z.number(),
  message: z.object({ id: z.string(), texts: z.array(z.string()) }).nullable(),
  // State written before sessions were bound has none; the next row naming one binds it.
  sessionRef: z.string().nullable().default(null),
});

const codexRolloutSchema = z.object({
  kind: z.literal("codex-rollout"),
  turns: z.record(
    z.string(),
    z.object({
      appId: z.string(),
      members: z.array(z.object({ deliveryId: z.string(), itemRef: z.string().nullable() })),
    }),
  ),
  highWaterMs: z.number(),
});

const runtimeStateSchema: z.ZodType<RuntimeState> = z.object({
  v: z.literal(1),
  agentId: z.string(),
  machineId: z.string(),
  runtimeId: z.string(),
  engine: engineKindSchema,
  appliedSeq: z.number().int(),
  closed: z.boolean(),
  inputs: z.array(openInputSchema),
  pendingRequests: z.array(z.string()).default([]),
  ordinals: z.object({ thread: z.number().int(), turn: z.number().int(), node: z.number().int() }),
  format: z.discriminatedUnion("kind", [
    claudeStreamSchema,
    codexAppServerSchema,
    claudeTranscriptSchema,
    codexRolloutSchema,
  ]),
});

export function parseStoredState(json: string): RuntimeState {
  return runtimeStateSchema.parse(JSON.parse(json));
}
