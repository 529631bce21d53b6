import { hostname } from "node:os";
import { readFileSync } from "node:fs";
import { z } from "zod";
import { envBool, envInt, envJwtSecret } from "../../libs/config/env-fields.js";
import { ConfigError, parseConfig } from "../../libs/config/load-config.js";
import { agentsFileSchema, type AgentConfig } from "../../libs/contract/engine.js";
import { harnessTokenLifetimeEnvFields } from "../../libs/auth/token-lifetime.js";
import { keepaliveEnvFields } from "../../libs/http/socket-keepalive.js";
import { retentionEnvFields } from "../../libs/harness-store/retention-config.js";
import { errorMessage } from "../../libs/errors/error-message.js";

export const gatewayEnvSchema = z.object({
  /** Verifies the `harness` audience: the OS's per-device peer tokens and operator tokens (required). */
  HARNESS_JWT_SECRET: envJwtSecret,
  ...harnessTokenLifetimeEnvFields,
  AGENTS_FILE: z.string().min(1),
  HARNESS_MACHINE_ID: z.string().min(1).max(128).default(hostname()),
  /** The operator's switch for the v2 capability (docs/wire-protocol.md, "Connecting"). */
  TURN_CORRELATION_V2: envBool(true),
  /** How peers without v2 get results: `plain` (proven single inputs only) or `correlated` (later revision). */
  LEGACY_SUMMARY_PROFILE: z.enum(["plain", "correlated"]).default("plain"),
  RATE_LIMIT_BURST: envInt(20, 1, 1_000_000),
  RATE_LIMIT_PER_SECOND: z.coerce.number().positive().default(1),
  MAX_IN_FLIGHT: envInt(4, 1, 1_000),
  LIVE_CATCHUP_MS: envInt(30_000, 50, 600_000),
  DISPATCH_SWEEP_INTERVAL_MS: envInt(5_000, 50, 3_600_000),
  DISPATCH_SWEEP_MIN_AGE_MS: envInt(5_000, 0, 3_600_000),
  ...retentionEnvFields,
  ...keepaliveEnvFields,
});
export type GatewayConfig = z.infer<typeof gatewayEnvSchema>;

export interface LoadedGatewayConfig {
  config: GatewayConfig;
  agents: AgentConfig[];
}

/** Parses the environment and the agents file; any problem is a ConfigError naming the variable. */
export function loadGatewayConfig(env: NodeJS.ProcessEnv): LoadedGatewayConfig {
  const config = parseConfig(gatewayEnvSchema, env);
  let raw: unknown;
  try {
    raw = JSON.parse(readFileSync(config.AGENTS_FILE, "utf8"));
  } catch (error) {
    throw new ConfigError("AGENTS_FILE", errorMessage(error));
  }
  const agents = agentsFileSchema.safeParse(raw);
  if (!agents.success) {
    const issue = agents.error.issues[0];
    throw new ConfigError("AGENTS_FILE", `${issue?.path.join(".")}: ${issue?.message}`);
  }
  return { config, agents: agents.data };
}
