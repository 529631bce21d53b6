import { z } from "zod";
import { envBool, envInt, envJwtSecret } from "../../libs/config/env-fields.js";
import { crashPointEnv } from "../../libs/test-support/crash-point.js";

export const routerConfigSchema = z.object({
  /** Signs the per-device Harness tokens (aud `harness`, role `os`); the Harness verifies them with the same one. */
  HARNESS_JWT_SECRET: envJwtSecret,
  HARNESS_URL: z
    .string()
    .regex(/^wss?:\/\//, "a ws:// or wss:// URL")
    .default("ws://127.0.0.1:8080/v1/harness/ws"),
  TURN_CORRELATION_V2: envBool(true),
  /** A router replica's partition leases: a dead replica's partitions move to the others after this long. */
  ROUTER_LEASE_TTL_MS: envInt(15_000, 300),
  /** How long a device stays inactive (no Lamp, nothing pending, queued or held) before its session is let go. */
  ROUTER_IDLE_GRACE_MS: envInt(30_000, 0),
  /** How often each held partition re-reads its active devices and checks its held ones for idleness. */
  ROUTER_DEVICE_SWEEP_MS: envInt(5_000, 50, 600_000),
  /** How often a session reads its commands without a wake-up (a lost wake-up is caught up this late at worst). */
  ROUTER_COMMAND_CATCHUP_MS: envInt(5_000, 50, 600_000),
  /** A pending run ends `unknown` this long after its voice target expired. */
  RUN_DEADLINE_GRACE_MS: envInt(5 * 60_000, 0),
  /** How often each device session looks for pending runs past their deadline. */
  RUN_DEADLINE_SWEEP_MS: envInt(5_000, 50, 600_000),
  HARNESS_REQUEST_TIMEOUT_MS: envInt(5_000, 50),
  HARNESS_RECONNECT_MS: envInt(1_000, 10),
  ROUTER_INSTANCE_ID: z.string().min(1).max(128).optional(),
  /** Crash tests: `router.after-stage`. */
  ...crashPointEnv,
});
export type RouterConfig = z.infer<typeof routerConfigSchema>;
