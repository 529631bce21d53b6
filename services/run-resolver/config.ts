import { z } from "zod";
import { envInt } from "../../libs/config/env-fields.js";
import { crashPointEnv } from "../../libs/test-support/crash-point.js";

const DAY_MS = 86_400_000;

/** Crash tests: FAILPOINT=`run-resolver.after-store`. Retention: the OS store's terminal runs and their results. */
export const runResolverConfigSchema = z.object({
  ...crashPointEnv,
  /** Same variable as the tts-dispatcher's playback-job retention: what is kept for retrieval, the same span. */
  RESULT_RETENTION_MS: envInt(30 * DAY_MS, 1_000),
  RETENTION_SWEEP_INTERVAL_MS: envInt(10_000, 100, 3_600_000),
});
