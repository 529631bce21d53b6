import { z } from "zod";
import { idempotencyKeySchema, nonEmpty, opaqueIdSchema, requestIdSchema, utf8Bytes } from "./identifiers.js";
import { receiptSchema } from "./receipt.js";

/** The capability this project implements on both sides. */
export const TURN_CORRELATION_V2 = "turn.correlation.v2";
export const PROTOCOL_VERSION = 1;
export const MAX_PROMPT_BYTES = 16 * 1024;

export const promptTextSchema = z
  .string()
  .refine((text) => text.trim().length > 0, "must not be blank")
  .refine(
    (text) => utf8Bytes(text) <= MAX_PROMPT_BYTES,
    `must be at most ${MAX_PROMPT_BYTES} bytes of UTF-8`,
  );

// ---- peer (OS) -> Harness: application requests; unknown fields are rejected -------------------------------

export const helloSchema = z.strictObject({
  type: z.literal("hello"),
  requestId: requestIdSchema,
  proto: z.literal(PROTOCOL_VERSION),
  capabilities: z.array(z.string().min(1).max(64)).max(32).default([]),
  resume: z
    .strictObject({ serverInstanceId: opaqueIdSchema, cursor: z.number().int().nonnegative() })
    .optional(),
});

export const turnSendSchema = z.strictObject({
  type: z.literal("turn.send"),
  requestId: requestIdSchema,
  machineId: opaqueIdSchema,
  agentId: opaqueIdSchema,
  idempotencyKey: idempotencyKeySchema,
  text: promptTextSchema,
});

export const turnStopSchema = z.strictObject({
  type: z.literal("turn.stop"),
  requestId: requestIdSchema,
  machineId: opaqueIdSchema,
  agentId: opaqueIdSchema,
  idempotencyKey: idempotencyKeySchema,
  /** The device's own `turn.send` this stop is for (extension; absent: whatever the device owns). */
  targetIdempotencyKey: idempotencyKeySchema.optional(),
});

export const receiptGetSchema = z.strictObject({
  type: z.literal("receipt.get"),
  requestId: requestIdSchema,
  idempotencyKey: idempotencyKeySchema,
});

export const harnessRequestSchema = z.discriminatedUnion("type", [
  helloSchema,
  turnSendSchema,
  turnStopSchema,
  receiptGetSchema,
]);
export type HarnessRequest = z.infer<typeof harnessRequestSchema>;
export type HelloRequest = z.infer<typeof helloSchema>;
export type TurnSendRequest = z.infer<typeof turnSendSchema>;
export type TurnStopRequest = z.infer<typeof turnStopSchema>;

// ---- Harness -> peer ---------------------------------------------------------------------------------------------

export const harnessErrorCodeSchema = z.enum([
  "INVALID_REQUEST",
  "UNAUTHORIZED",
  "UNSUPPORTED_CAPABILITY",
  "MACHINE_MISMATCH",
  "AGENT_NOT_FOUND",
  "PAYLOAD_TOO_LARGE",
  "IDEMPOTENCY_CONFLICT",
  "BACKPRESSURE",
  "RATE_LIMITED",
  "REVOKED",
  "INTERNAL",
]);
export type HarnessErrorCode = z.infer<typeof harnessErrorCodeSchema>;

export const harnessLimitsSchema = z.object({
  receiptCapacity: z.number().int().positive(),
  receiptRetentionSeconds: z.number().int().positive(),
  eventCapacity: z.number().int().positive(),
  eventRetentionSeconds: z.number().int().positive(),
  resultRetentionSeconds: z.number().int().positive(),
  maxPromptBytes: z.number().int().positive(),
  maxGroupMembers: z.number().int().positive(),
  maxResultPayloadBytes: z.number().int().positive(),
  rateLimitBurst: z.number().int().positive(),
  rateLimitPerSecond: z.number().positive(),
  maxInFlight: z.number().int().positive(),
});
export type HarnessLimits = z.infer<typeof harnessLimitsSchema>;

export const helloResultSchema = z.strictObject({
  type: z.literal("hello_result"),
  requestId: requestIdSchema,
  proto: z.literal(PROTOCOL_VERSION),
  machineId: nonEmpty,
  serverInstanceId: nonEmpty,
  capabilities: z.array(z.string()),
  resumed: z.boolean(),
  cursor: z.number().int().nonnegative(),
  limits: harnessLimitsSchema,
});

export const turnSendResultSchema = z.strictObject({
  type: z.enum(["turn.send_result", "turn.stop_result"]),
  requestId: requestIdSchema,
  status: z.enum(["accepted", "duplicate"]),
  receipt: receiptSchema,
});

export const receiptGetResultSchema = z.strictObject({
  type: z.literal("receipt.get_result"),
  requestId: requestIdSchema,
  receipt: receiptSchema.nullable(),
});

/** Any request can fail before acceptance: `{type:"<op>_result", requestId, error:{code,message}}`. */
export const harnessErrorResultSchema = z.strictObject({
  type: z.string().regex(/^[a-z.]+_result$/),
  requestId: z.string().nullable(),
  error: z.strictObject({ code: harnessErrorCodeSchema, message: z.string() }),
});

export const eventKindSchema = z.enum([
  "receipt.updated",
  "turn.result",
  "turn.summary",
  "turn.started",
  "turn.done",
]);

/** Transport envelope of every event; `payload` is checked per kind by its consumer. */
export const harnessEventSchema = z.strictObject({
  type: z.literal("event"),
  eventId: z.number().int().positive(),
  serverInstanceId: nonEmpty,
  machineId: nonEmpty,
  agentId: nonEmpty,
  kind: z.string().min(1),
  payload: z.record(z.string(), z.unknown()),
});

export const resyncSchema = z.strictObject({
  type: z.literal("resync"),
  reason: z.enum(["instance_changed", "cursor_too_old"]),
  serverInstanceId: nonEmpty,
  cursor: z.number().int().nonnegative(),
});

export const receiptUpdatedPayloadSchema = z.looseObject({
  receipt: receiptSchema,
  idempotencyKey: idempotencyKeySchema,
});

/** The plain legacy `turn.summary` payload (single proven input, no correlation block). */
export const legacySummaryPayloadSchema = z.looseObject({
  kind: z.literal("summary").optional(),
  text: z.string().optional(),
  recap: z.string().optional(),
  fullText: z.string().optional(),
  idempotencyKey: idempotencyKeySchema.optional(),
  turnId: z.string().nullable().optional(),
  runId: z.string().optional(),
  run_id: z.string().optional(),
  receipt: z.looseObject({ idempotencyKey: idempotencyKeySchema.optional() }).optional(),
});
