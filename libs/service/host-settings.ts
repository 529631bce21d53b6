import { z } from "zod";
import { envInt } from "../config/env-fields.js";
import { parseConfig } from "../config/load-config.js";

/** How a host process treats its Redis connections and its own stop; read with the rest of the config at boot. */
export const hostSettingsSchema = z.object({
  /** A command on the shared connection fails after this long (it never waits out a Redis outage). */
  REDIS_COMMAND_TIMEOUT_MS: envInt(3_000, 100, 60_000),
  /** SIGTERM/SIGINT: drain within this, then exit 1 anyway. */
  SHUTDOWN_TIMEOUT_MS: envInt(15_000, 100, 600_000),
});

export type HostSettings = z.infer<typeof hostSettingsSchema>;

export function hostSettingsOf(env: NodeJS.ProcessEnv): HostSettings {
  return parseConfig(hostSettingsSchema, env);
}
