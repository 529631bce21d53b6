import { z } from "zod";
import { playbackAckStateSchema } from "./lamp-wire.js";

/**
 * The OS's durable intent to speak (docs/architecture.md "OS store"): `B:outbox:<resultKey>` says what happened to
 * one result's spoken answer, `B:playback:<playbackId>` is one playback sent to the Lamp (the answer, a failure
 * notice, or a "say that again"). Written only by tts-dispatcher; the OS API reads them.
 */

export const playbackStateSchema = z.enum([
  "queued",
  "sending",
  "played",
  "uncertain",
  "suppressed",
  "failed",
]);
export type PlaybackState = z.infer<typeof playbackStateSchema>;

export const playbackKindSchema = z.enum(["answer", "notice", "repeat"]);
export type PlaybackKind = z.infer<typeof playbackKindSchema>;

/** The reasons a result or playback ends `suppressed` (not spoken at all). */
export const SUPPRESSION_REASONS = [
  "expired",
  "not_voice_route",
  "cancelled",
  "mixed_destinations",
  "failed_result",
  "cancelled_result",
] as const;

/** Why a result is not spoken (state `suppressed`) or a playback ended `failed` / `uncertain`. */
export const playbackReasonSchema = z.enum([
  ...SUPPRESSION_REASONS,
  // failed
  "lamp_offline",
  "lamp_rejected",
  "worker_lost",
  // uncertain
  "ack_timeout",
  "send_interrupted",
]);
export type PlaybackReason = z.infer<typeof playbackReasonSchema>;

const optionalText = z
  .string()
  .optional()
  .transform((value) => (value === "" ? undefined : value));
const optionalMs = z
  .string()
  .optional()
  .transform((value) => (value === undefined || value === "" ? undefined : Number(value)))
  .pipe(z.number().int().nonnegative().optional());

/** Every transition stamps `<state>At` (epoch ms). */
const transitionTimes = {
  queuedAt: optionalMs,
  sendingAt: optionalMs,
  playedAt: optionalMs,
  uncertainAt: optionalMs,
  suppressedAt: optionalMs,
  failedAt: optionalMs,
};

export const outboxEntrySchema = z.object({
  deviceId: z.string().min(1),
  resultKey: z.string().min(1),
  resultId: z.string().min(1),
  state: playbackStateSchema,
  reason: optionalText.pipe(playbackReasonSchema.optional()),
  /** The answer's playback; absent when the result was suppressed. */
  playbackId: optionalText,
  /** A short failure notice sent instead of a failed result (FAILURE_NOTICE_TEXT), when configured. */
  noticePlaybackId: optionalText,
  voiceTargetId: optionalText,
  speechText: z.string(),
  lastAck: optionalText.pipe(playbackAckStateSchema.optional()),
  lastAckAt: optionalMs,
  createdAt: optionalMs.pipe(z.number()),
  ...transitionTimes,
});
export type OutboxEntry = z.infer<typeof outboxEntrySchema>;

export const playbackRecordSchema = z.object({
  deviceId: z.string().min(1),
  playbackId: z.string().min(1),
  resultKey: z.string().min(1),
  resultId: z.string().min(1),
  kind: playbackKindSchema,
  state: playbackStateSchema,
  reason: optionalText.pipe(playbackReasonSchema.optional()),
  voiceTargetId: optionalText,
  /** Epoch ms; a playback whose target expired before it is sent is suppressed instead (not for repeats). */
  voiceTargetExpiresAt: optionalMs,
  /** The member run whose route owns the spoken reply; a cancel of it before sending suppresses the playback. */
  newestRunId: optionalText,
  text: z.string(),
  /** The device-gateway instance the playback.start went to. */
  gatewayId: optionalText,
  lastAck: optionalText.pipe(playbackAckStateSchema.optional()),
  lastAckAt: optionalMs,
  /** When its playback.start was handed to the gateway (epoch ms): from then on it may be on the Lamp. */
  sentAt: optionalMs,
  /** Until when a sent playback waits for the Lamp's ack before it becomes `uncertain` (epoch ms). */
  ackDeadline: optionalMs,
  createdAt: optionalMs.pipe(z.number()),
  ...transitionTimes,
});
export type PlaybackRecord = z.infer<typeof playbackRecordSchema>;
