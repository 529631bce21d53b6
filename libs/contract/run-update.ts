import { z } from "zod";
import { epochMsSchema, nonEmpty, opaqueIdSchema } from "./identifiers.js";
import { receiptInputSchema, receiptStateSchema } from "./receipt.js";
import { outcomeSchema } from "./turn-result.js";

/** A run's state as the OS API reports it. */
export const runStateSchema = z.enum(["pending", "resolved", "unknown"]);
export type RunState = z.infer<typeof runStateSchema>;

/**
 * What changed for the run (docs/wire-protocol.md, "Run updates"):
 * - `receipt`: the Harness receipt moved (accepted, queued behind a running task, steered into it: see `input`);
 * - `cancelled`: the Lamp cancelled the run (nothing will be spoken for it);
 * - `resolved`: a result listing the run was stored (`outcome`, `resultId`);
 * - `suppressed`: the result's answer will not be spoken (`reason`: expired, cancelled, failed_result, …);
 * - `playback`: a playback for the run's result ended without a confirmed start (`reason`: ack_timeout, …);
 * - `unknown`: the run ended without a result (`reason`: the Harness receipt's error code, or the OS's own).
 */
export const runChangeSchema = z.enum([
  "receipt",
  "cancelled",
  "resolved",
  "suppressed",
  "playback",
  "unknown",
]);
export type RunChange = z.infer<typeof runChangeSchema>;

/**
 * Why the OS itself ended a run `unknown` (the Harness's receipt error codes, e.g. `ENGINE_EXITED`, and the send
 * refusals, e.g. `PAYLOAD_TOO_LARGE`, are passed through as they are).
 */
export const OS_END_REASONS = {
  /** The deadline passed and the Harness never answered `receipt.get` with a receipt for the run's key. */
  receiptNotFound: "RECEIPT_NOT_FOUND",
  /** The deadline passed while a result naming the run waited for receipts that never bound. */
  resultHeld: "RESULT_HELD_UNBOUND",
  /** The deadline passed with the receipt known but no result for it. */
  resultNotReceived: "RESULT_NOT_RECEIVED",
  /** The send was first tried on a Harness instance that is gone, and the new one has no receipt for it. */
  instanceChanged: "INSTANCE_CHANGED",
  /** A whole further grace after the deadline passed without a live Harness link to ask: the OS cannot learn more. */
  harnessUnreachable: "HARNESS_UNREACHABLE",
} as const;

const reasonSchema = z.string().min(1).max(64);

/** One entry of the device's ordered update log `B:run-updates` (stream ids `0-<updateId>`), written in Lua. */
export const runUpdateRecordSchema = z.strictObject({
  runId: opaqueIdSchema,
  requestId: nonEmpty,
  state: runStateSchema,
  change: runChangeSchema,
  outcome: outcomeSchema.optional(),
  reason: reasonSchema.optional(),
  resultId: opaqueIdSchema.optional(),
  playbackId: opaqueIdSchema.optional(),
  receiptState: receiptStateSchema.optional(),
  input: receiptInputSchema.optional(),
  at: epochMsSchema,
});
export type RunUpdateRecord = z.infer<typeof runUpdateRecordSchema>;

/** OS → Lamp: `run.update`, to the owning device only, in `updateId` order. */
export const runUpdateFrameSchema = runUpdateRecordSchema.extend({
  type: z.literal("run.update"),
  /** Increasing per device; a Lamp keeps the highest it has handled and resumes after it. */
  updateId: z.number().int().positive(),
  at: z.iso.datetime(),
});
export type RunUpdateFrame = z.infer<typeof runUpdateFrameSchema>;

/** The frame for one stored update. */
export function runUpdateFrame(updateId: number, record: RunUpdateRecord): RunUpdateFrame {
  return { type: "run.update", updateId, ...record, at: new Date(record.at).toISOString() };
}

/** How many updates each device's log keeps (approximately: the log is trimmed with `MAXLEN ~`). */
export const RUN_UPDATES_KEPT = 500;

/**
 * The pub/sub notice of one append, on the channel named like the log: the update itself, so a gateway whose socket
 * is right behind it sends it without reading the log (a socket further behind reads the log from its cursor).
 */
export const runUpdateNoticeSchema = z.strictObject({
  deviceId: nonEmpty,
  updateId: z.number().int().positive(),
  update: runUpdateRecordSchema,
});
export type RunUpdateNotice = z.infer<typeof runUpdateNoticeSchema>;

/**
 * The device a notice is about, with the update when it parses. A notice that is only a device id (what a publisher
 * from before the update was carried in it sends, during a rolling upgrade) or does not parse still names the
 * device, whose sockets then read the log.
 */
export function readRunUpdateNotice(message: string): { deviceId: string; notice?: RunUpdateNotice } {
  let json: unknown;
  try {
    json = JSON.parse(message);
  } catch {
    return { deviceId: message };
  }
  const notice = runUpdateNoticeSchema.safeParse(json);
  if (notice.success) return { deviceId: notice.data.deviceId, notice: notice.data };
  const deviceId = z.looseObject({ deviceId: nonEmpty }).safeParse(json);
  return { deviceId: deviceId.success ? deviceId.data.deviceId : message };
}
