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
  ROUTER_LEASE_TTL_MS: envInt(15_000, 300),
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
