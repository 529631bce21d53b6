import { z } from "zod";

/** The message every baseline stage passes on: about the size of a routed result, with when it was offered. */
export const baselineMessageSchema = z.strictObject({
  id: z.number().int().nonnegative(),
  window: z.number().int().nonnegative(),
  /** performance.timeOrigin + performance.now() in the driver: comparable across processes on one machine. */
  sentAt: z.number(),
  stage: z.number().int().nonnegative(),
  body: z.strictObject({
    deviceId: z.string(),
    resultId: z.string(),
    agentId: z.string(),
    fullText: z.string(),
    members: z.array(z.strictObject({ runId: z.string(), deliveryId: z.string() })),
  }),
});
export type BaselineMessage = z.infer<typeof baselineMessageSchema>;

/** Messages between the driver and the worker process (node IPC). */
export const workerCommandSchema = z.discriminatedUnion("type", [
  z.strictObject({ type: z.literal("measure"), window: z.number().int(), from: z.number(), to: z.number() }),
  z.strictObject({ type: z.literal("report"), window: z.number().int() }),
]);
export type WorkerCommand = z.infer<typeof workerCommandSchema>;

export const latencySummarySchema = z.strictObject({
  count: z.number(),
  p50: z.number().nullable(),
  p90: z.number().nullable(),
  p99: z.number().nullable(),
  max: z.number().nullable(),
});

export const workerReportSchema = z.strictObject({
  type: z.literal("report"),
  window: z.number().int(),
  /** Jobs of the window processed so far, and those processed inside the measured part. */
  completed: z.number().int(),
  completedMeasured: z.number().int(),
  latency: latencySummarySchema,
});
export type WorkerReport = z.infer<typeof workerReportSchema>;

export const BASELINE_STAGES = 5;
export const BASELINE_GROUP = "stage";
export const BASELINE_QUEUE = "baseline";
/** The streams are capped (approximately) so a long run does not fill Redis; no stage lags this far. */
export const BASELINE_STREAM_MAXLEN = 100_000;

export const streamKey = (prefix: string, stage: number) => `${prefix}:baseline:s${stage}`;

/** Wall-clock milliseconds with sub-millisecond resolution, comparable between processes. */
export const preciseNow = () => performance.timeOrigin + performance.now();
