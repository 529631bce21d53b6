import { parseArgs, type ParseArgsConfig } from "node:util";
import type { z } from "zod";
import { errorMessage } from "../libs/errors/error-message.js";

/** EX_USAGE (sysexits.h): the command line was wrong. */
export const EXIT_USAGE = 64;

/** One tool's command line: every tool parses with node's strict parser and checks the values with a zod schema. */
export interface ToolCommandLine<S extends z.ZodType> {
  /** What the user typed to run it (`lamp-sim`, `npm run token --`): the prefix of every error line. */
  name: string;
  /** The whole `--help` text: a usage line and what each option means. */
  help: string;
  options: NonNullable<ParseArgsConfig["options"]>;
  schema: S;
}

export type CommandLine<T> = { kind: "help" } | { kind: "args"; args: T } | { kind: "bad"; problem: string };

/** `--help` or `-h` anywhere before a `--` asks for help, whatever else the line says. */
function asksForHelp(argv: readonly string[]): boolean {
  const end = argv.indexOf("--");
  return (end < 0 ? argv : argv.slice(0, end)).some((arg) => arg === "--help" || arg === "-h");
}

/** node's parse errors are one sentence followed by advice; the first sentence is the problem. */
function parseProblem(error: unknown): string {
  const message = errorMessage(error);
  return message.split(/\.\s/)[0]?.replace(/\.$/, "") ?? message;
}

/** Pure: what a command line asks for, or its first problem in a few words. */
export function parseCommandLine<S extends z.ZodType>(
  command: ToolCommandLine<S>,
  argv: readonly string[],
): CommandLine<z.infer<S>> {
  if (asksForHelp(argv)) return { kind: "help" };
  let values: Record<string, unknown>;
  try {
    values = parseArgs({ args: [...argv], options: command.options, strict: true }).values;
  } catch (error) {
    return { kind: "bad", problem: parseProblem(error) };
  }
  const parsed = command.schema.safeParse(values);
  if (parsed.success) return { kind: "args", args: parsed.data };
  const issue = parsed.error.issues[0];
  const option = issue?.path.length ? `--${issue.path.join(".")}: ` : "";
  return { kind: "bad", problem: `${option}${issue?.message ?? "invalid arguments"}` };
}

/** The help text on stdout, exit 0. */
export function exitWithHelp(help: string): never {
  process.stdout.write(`${help}\n`);
  process.exit(0);
}

/** One line on stderr naming the problem, exit 64; never a stack trace. */
export function exitWithUsageError(name: string, problem: string): never {
  process.stderr.write(`${name}: ${problem} (see --help)\n`);
  process.exit(EXIT_USAGE);
}

/** A tool's arguments: `--help` prints the help and exits 0; a bad argument exits 64 with one line. */
export function readCommandLine<S extends z.ZodType>(
  command: ToolCommandLine<S>,
  argv: readonly string[] = process.argv.slice(2),
): z.infer<S> {
  const line = parseCommandLine(command, argv);
  if (line.kind === "help") return exitWithHelp(command.help);
  if (line.kind === "bad") return exitWithUsageError(command.name, line.problem);
  return line.args;
}
