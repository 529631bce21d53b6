import { Job, Queue, type ConnectionOptions } from "bullmq";
import { QUEUE_CATALOG } from "../../../libs/contract/catalog.js";
import { playbackJobSchema, type PlaybackJob } from "../../../libs/contract/lamp-payloads.js";
import type { PlaybackKind } from "../../../libs/contract/os-playback.js";
import { playbackJobId } from "./playback-ids.js";

/** What waking a playback job found: delayed (now promoted), already waiting/active/finished, or no job at all. */
export type WakeOutcome = "promoted" | "not_delayed" | "missing";

/**
 * Promotes a job delayed while it waits for the Lamp. A job that is no longer delayed (promoted by someone else, or
 * its delay just ran out) is left as it is; any other failure is thrown.
 */
export async function promoteIfDelayed(job: Job): Promise<WakeOutcome> {
  try {
    await job.promote();
    return "promoted";
  } catch (error) {
    if (await job.isDelayed()) throw error;
    return "not_delayed";
  }
}

/** Completed playback jobs kept for inspection, the newest first: a completed job holds nothing the outbox lacks. */
const COMPLETED_JOBS_KEPT = 1_000;

export interface PlaybackQueueSettings {
  connection: ConnectionOptions;
  /** BullMQ key prefix: `{<KEY_PREFIX>:bull}` (a hash tag: the queue's keys share one cluster slot). */
  prefix: string;
  maxAttempts: number;
  retryDelayMs: number;
  retentionMs: number;
}

/** The `lamp-playback` queue: one job per playback, its id derived from the playback's identity. */
export class PlaybackQueue {
  readonly queue: Queue<PlaybackJob>;

  constructor(private readonly settings: PlaybackQueueSettings) {
    this.queue = new Queue<PlaybackJob>(QUEUE_CATALOG.lampPlayback.name, {
      connection: settings.connection,
      prefix: settings.prefix,
    });
  }

  /**
   * Idempotent: while the job is retained, adding it again changes nothing; once it is gone, a job added again finds
   * its playback no longer queued and sends nothing (the outbox, not the job, is the playback's record). So a
   * completed job is kept only among the newest COMPLETED_JOBS_KEPT (what Bull Board shows), a failed one for the
   * retention.
   */
  async enqueue(kind: PlaybackKind, job: PlaybackJob): Promise<string> {
    const { maxAttempts, retryDelayMs, retentionMs } = this.settings;
    const jobId = playbackJobId(job.deviceId, job.playbackId);
    await this.queue.add(kind, playbackJobSchema.parse(job), {
      jobId,
      attempts: maxAttempts,
      backoff: { type: QUEUE_CATALOG.lampPlayback.retry.backoff, delay: retryDelayMs },
      removeOnComplete: { count: COMPLETED_JOBS_KEPT },
      removeOnFail: { age: Math.ceil(retentionMs / 1000) },
    });
    return jobId;
  }

  /** Wakes the playback's job if it is delayed waiting for the Lamp, so it claims at once. */
  async wake(deviceId: string, playbackId: string): Promise<WakeOutcome> {
    const job = await Job.fromId(this.queue, playbackJobId(deviceId, playbackId));
    return job ? promoteIfDelayed(job) : "missing";
  }

  counts(): Promise<Record<string, number>> {
    return this.queue.getJobCounts("waiting", "active", "completed", "failed", "delayed");
  }

  close(): Promise<void> {
    return this.queue.close();
  }
}
