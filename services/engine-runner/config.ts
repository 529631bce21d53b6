import { z } from "zod";
import { envInt } from "../../libs/config/env-fields.js";

export const engineRunnerEnvSchema = z.object({
  /** JSON file listing the agents this runner hosts (`agentsFileSchema`). */
  AGENTS_FILE: z.string().min(1),
  /** Which machine this runner is; required only when the agents file names more than one machine. */
  MACHINE_ID: z.string().min(1).max(128).optional(),
  ENGINE_RESTART_MIN_MS: envInt(200, 10, 60_000),
  ENGINE_RESTART_MAX_MS: envInt(5_000, 10, 600_000),
  /** A runtime that lived this long counts as healthy: the next restart starts from the minimum backoff again. */
  ENGINE_STABLE_MS: envInt(10_000, 100),
  /** How long a dispatch waits for its engine to be running before the input is recorded undeliverable. */
  DISPATCH_READY_TIMEOUT_MS: envInt(15_000, 100),
  TRANSCRIPT_POLL_MS: envInt(200, 10, 60_000),
  /** How long a per-input delivery marker is kept (it is what makes redelivery write nothing twice). */
  DELIVERY_MARKER_TTL_SECONDS: envInt(7 * 24 * 3600, 60),
});
