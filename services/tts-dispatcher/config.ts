import { z } from "zod";
import { envInt } from "../../libs/config/env-fields.js";
import { crashPointEnv } from "../../libs/test-support/crash-point.js";
import { MIN_SPEECH_CHARS } from "./speech/render-speech.js";

const DAY_MS = 24 * 3600 * 1000;

export const ttsDispatcherEnvSchema = z.object({
  /** How long the worker waits for the Lamp's `started` ack before the playback becomes `uncertain`. */
  PLAYBACK_ACK_TIMEOUT_MS: envInt(30_000, 50, 600_000),
  SPEECH_MAX_CHARS: envInt(600, MIN_SPEECH_CHARS, 20_000),
  /** Spoken to the newest member's live voice target when a result failed; empty = no notice. */
  FAILURE_NOTICE_TEXT: z.string().max(300).default("That task failed. The details are on the screen."),
  /**
   * Attempts of a playback job that errored (Redis, a gateway stream write) before it ends `failed` / `worker_lost`.
   * Waiting for the Lamp spends none.
   */
  PLAYBACK_MAX_ATTEMPTS: envInt(5, 1, 100),
  /** First retry delay after an error; doubles per attempt (exponential backoff). */
  PLAYBACK_RETRY_DELAY_MS: envInt(2_000, 10, 600_000),
  /**
   * While no Lamp is connected a playback waits, re-checking after at most this long (an answer or notice until its
   * voice target expires); a `lamp.connected` wakes it at once.
   */
  PLAYBACK_OFFLINE_RECHECK_MS: envInt(30_000, 10, 600_000),
  /** A repeat has no voice-target expiry: it waits this long after its request, then ends `failed` / `lamp_offline`. */
  PLAYBACK_REPEAT_WAIT_MS: envInt(5 * 60_000, 10, DAY_MS),
  PLAYBACK_WORKER_CONCURRENCY: envInt(16, 1, 1_000),
  /** A worker that dies mid-job loses its lock after this long; the job is then re-run and ends `uncertain`. */
  PLAYBACK_LOCK_DURATION_MS: envInt(30_000, 500, 600_000),
  PLAYBACK_STALLED_INTERVAL_MS: envInt(15_000, 200, 600_000),
  /**
   * Completed/failed playback jobs, and repeat playbacks (which have no outbox entry for the OS retention sweep to
   * follow), are kept this long; keep it >= the OS result retention.
   */
  RESULT_RETENTION_MS: envInt(30 * DAY_MS, 60_000),
  /** Crash tests: `tts-dispatcher.after-outbox` or `tts-dispatcher.mid-send`. */
  ...crashPointEnv,
});
