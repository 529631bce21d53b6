import { z } from "zod";
import { nonEmpty, opaqueIdSchema, requestIdSchema } from "./identifiers.js";
import { promptTextSchema } from "./harness-wire.js";
import { receiptSchema } from "./receipt.js";

export const replyRouteSchema = z.enum(["voice", "display", "silent"]);
export type ReplyRoute = z.infer<typeof replyRouteSchema>;

export const voiceTargetSchema = z.strictObject({
  id: z.string().min(1).max(128),
  /** ISO-8601 instant; when absent the OS applies its default expiry (VOICE_TARGET_TTL_MS after the request). */
  expiresAt: z.iso.datetime({ offset: true }).optional(),
});

// ---- Lamp -> OS -----------------------------------------------------------------------------------------------

export const voiceRequestSchema = z.strictObject({
  type: z.literal("voice.request"),
  requestId: requestIdSchema,
  agentId: opaqueIdSchema,
  machineId: opaqueIdSchema,
  text: promptTextSchema,
  voiceTarget: voiceTargetSchema,
  replyRoute: replyRouteSchema,
});

export const playbackAckStateSchema = z.enum(["started", "finished", "interrupted", "rejected"]);

export const playbackAckSchema = z.strictObject({
  type: z.literal("playback.ack"),
  playbackId: opaqueIdSchema,
  state: playbackAckStateSchema,
});

export const voiceCancelSchema = z.strictObject({
  type: z.literal("voice.cancel"),
  requestId: requestIdSchema,
  runId: opaqueIdSchema,
});

export const playbackRepeatSchema = z.strictObject({
  type: z.literal("playback.repeat"),
  requestId: requestIdSchema,
  resultId: opaqueIdSchema,
  /** Where the Lamp wants it spoken now; absent: the voice target of the device's latest voice.request. */
  voiceTargetId: voiceTargetSchema.shape.id.optional(),
});

/** Replay the device's run.update log after `after` (0: everything retained), then continue live. */
export const runUpdatesSinceSchema = z.strictObject({
  type: z.literal("run.updates_since"),
  requestId: requestIdSchema,
  after: z.number().int().nonnegative(),
});

export const lampRequestSchema = z.discriminatedUnion("type", [
  voiceRequestSchema,
  playbackAckSchema,
  voiceCancelSchema,
  playbackRepeatSchema,
  runUpdatesSinceSchema,
]);
export type LampRequest = z.infer<typeof lampRequestSchema>;
export type VoiceRequest = z.infer<typeof voiceRequestSchema>;
export type PlaybackRepeat = z.infer<typeof playbackRepeatSchema>;

// ---- OS -> Lamp -----------------------------------------------------------------------------------------------

export const lampErrorCodeSchema = z.enum([
  "INVALID_REQUEST",
  "UNAUTHORIZED",
  "NOT_FOUND",
  /** The idempotency key minted for a new run already names another run: nothing registered, a retry is safe. */
  "IDEMPOTENCY_KEY_IN_USE",
  /** "Say that again" of a result that is never spoken: failed or cancelled, mixed destinations, not a voice route. */
  "NOT_REPEATABLE",
  "PAYLOAD_TOO_LARGE",
  /** The device's voice.request token bucket is empty (LAMP_RATE_LIMIT_BURST, LAMP_RATE_LIMIT_PER_SECOND). */
  "RATE_LIMITED",
  /** The device already has LAMP_MAX_PENDING_RUNS unresolved runs: nothing registered, retry once some resolve. */
  "TOO_MANY_PENDING_RUNS",
  /** The device already has PLAYBACK_MAX_QUEUED_REPEATS repeats not yet started: nothing queued, retry later. */
  "TOO_MANY_REPEATS",
  "UNAVAILABLE",
  "INTERNAL",
]);
export type LampErrorCode = z.infer<typeof lampErrorCodeSchema>;

export const voiceRequestResultSchema = z.strictObject({
  type: z.literal("voice.request_result"),
  requestId: requestIdSchema,
  runId: nonEmpty,
  idempotencyKey: nonEmpty,
  /** Null while the Harness has not answered yet; the run is registered and the send proceeds regardless. */
  receipt: receiptSchema.nullable(),
});

export const voiceCancelResultSchema = z.strictObject({
  type: z.literal("voice.cancel_result"),
  requestId: requestIdSchema,
  runId: nonEmpty,
  cancelled: z.boolean(),
});

export const playbackRepeatResultSchema = z.strictObject({
  type: z.literal("playback.repeat_result"),
  requestId: requestIdSchema,
  playbackId: nonEmpty,
});

/**
 * Sent before the replayed updates: `head` is the newest updateId now; `truncated` says updates after `after` were
 * already trimmed (or `after` is ahead of the log), so the Lamp should reconcile with `GET /v1/runs`.
 */
export const runUpdatesSinceResultSchema = z.strictObject({
  type: z.literal("run.updates_since_result"),
  requestId: requestIdSchema,
  after: z.number().int().nonnegative(),
  head: z.number().int().nonnegative(),
  truncated: z.boolean(),
});

export const playbackStartSchema = z.strictObject({
  type: z.literal("playback.start"),
  playbackId: nonEmpty,
  resultId: nonEmpty,
  voiceTargetId: nonEmpty,
  text: nonEmpty,
});
export type PlaybackStart = z.infer<typeof playbackStartSchema>;

export const lampErrorResultSchema = z.strictObject({
  type: z.string().regex(/^[a-z.]+_result$/),
  requestId: z.string().nullable(),
  playbackId: z.string().optional(),
  error: z.strictObject({ code: lampErrorCodeSchema, message: z.string() }),
});
