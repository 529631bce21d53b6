import { parseArgs, type ParseArgsConfig } from "node:util";
import type { z } from "zod";

/**
 * Parses a tool's command line with node's strict parser and checks it with a zod schema; the first problem is
 * thrown together with the tool's usage text.
 */
export function parseToolArgs<S extends z.ZodType>(
  argv: string[],
  options: NonNullable<ParseArgsConfig["options"]>,
  schema: S,
  usage: string,
): z.infer<S> {
  const { values } = parseArgs({ args: argv, options, strict: true });
  const parsed = schema.safeParse(values);
  if (parsed.success) return parsed.data;
  const issue = parsed.error.issues[0];
  throw new Error(`${issue?.path.join(".") || "arguments"}: ${issue?.message ?? "invalid"}\n${usage}`);
}
