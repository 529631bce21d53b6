import { Queue, type ConnectionOptions } from "bullmq";
import { z } from "zod";
import type { PlaybackKind } from "../../../libs/contract/os-playback.js";
import { playbackJobId } from "./playback-ids.js";

export const PLAYBACK_QUEUE = "lamp-playback";

export const playbackJobSchema = z.strictObject({
  deviceId: z.string().min(1),
  playbackId: z.string().min(1),
});
export type PlaybackJob = z.infer<typeof playbackJobSchema>;

export interface PlaybackQueueSettings {
  connection: ConnectionOptions;
  /** BullMQ key prefix: `<KEY_PREFIX>:bull`. */
  prefix: string;
  maxAttempts: number;
  retryDelayMs: number;
  retentionMs: number;
}

/** The `lamp-playback` queue: one job per playback, its id derived from the playback's identity. */
export class PlaybackQueue {
  readonly queue: Queue<PlaybackJob>;

  constructor(private readonly settings: PlaybackQueueSettings) {
    this.queue = new Queue<PlaybackJob>(PLAYBACK_QUEUE, {
      connection: settings.connection,
      prefix: settings.prefix,
    });
  }

  /** Idempotent: while the job is retained, adding it again changes nothing. */
  async enqueue(kind: PlaybackKind, job: PlaybackJob): Promise<string> {
    const { maxAttempts, retryDelayMs, retentionMs } = this.settings;
    const jobId = playbackJobId(job.deviceId, job.playbackId);
    const retention = { age: Math.ceil(retentionMs / 1000) };
    await this.queue.add(kind, playbackJobSchema.parse(job), {
      jobId,
      attempts: maxAttempts,
      backoff: { type: "exponential", delay: retryDelayMs },
      removeOnComplete: retention,
      removeOnFail: retention,
    });
    return jobId;
  }

  counts(): Promise<Record<string, number>> {
    return this.queue.getJobCounts("waiting", "active", "completed", "failed", "delayed");
  }

  close(): Promise<void> {
    return this.queue.close();
  }
}
