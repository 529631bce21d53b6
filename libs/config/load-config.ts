import type { z } from "zod";

export class ConfigError extends Error {
  constructor(
    readonly variable: string,
    detail: string,
  ) {
    super(`invalid configuration: ${variable}: ${detail}`);
    this.name = "ConfigError";
  }
}

/** Parses an environment with a zod object schema; the first problem names the variable at fault. */
export function parseConfig<S extends z.ZodType>(
  schema: S,
  env: NodeJS.ProcessEnv = process.env,
): z.infer<S> {
  const parsed = schema.safeParse(env);
  if (parsed.success) return parsed.data;
  const issue = parsed.error.issues[0];
  const variable = issue?.path.join(".") || "(environment)";
  throw new ConfigError(variable, issue?.message ?? "invalid value");
}

/** Fail fast at the edge: one clear line and exit code 78 (EX_CONFIG) instead of a failure deep in a handler. */
export function loadConfigOrExit<S extends z.ZodType>(
  schema: S,
  env: NodeJS.ProcessEnv = process.env,
): z.infer<S> {
  try {
    return parseConfig(schema, env);
  } catch (error) {
    if (!(error instanceof ConfigError)) throw error;
    process.stderr.write(`${error.message}\n`);
    process.exit(78);
  }
}
