import { resolve } from "node:path";
import { devSecret } from "../../libs/auth/dev-secret.js";

/**
 * Laptop defaults for `npm start`: two generated development JWT secrets (the OS's and the Harness's, distinct), the
 * demo agents (engine-sim speaking the real Claude and Codex protocols) and the router talking to this very
 * process's Harness gateway. Anything set in the environment wins.
 */
export function withLocalDefaults(env: NodeJS.ProcessEnv): NodeJS.ProcessEnv {
  const port = env.PORT ?? "8080";
  return {
    ...env,
    AUTH_JWT_SECRET: env.AUTH_JWT_SECRET ?? devSecret("os"),
    HARNESS_JWT_SECRET: env.HARNESS_JWT_SECRET ?? devSecret("harness"),
    AGENTS_FILE: env.AGENTS_FILE ?? resolve("config/agents.local.json"),
    HARNESS_MACHINE_ID: env.HARNESS_MACHINE_ID ?? "local",
    MACHINE_ID: env.MACHINE_ID ?? "local",
    HARNESS_URL: env.HARNESS_URL ?? `ws://127.0.0.1:${port}/v1/harness/ws`,
  };
}
