import { z } from "zod";
import { readCommandLine, type ToolCommandLine } from "../cli-args.js";

export const protocolSchema = z.enum(["claude-stream-json", "codex-app-server"]);
export type SimProtocol = z.infer<typeof protocolSchema>;

const argsSchema = z
  .strictObject({
    protocol: protocolSchema,
    replay: z.string().min(1).optional(),
    scenario: z.string().min(1).optional(),
    state: z.string().min(1).optional(),
    "log-inputs": z.string().min(1).optional(),
  })
  .refine((args) => (args.replay === undefined) !== (args.scenario === undefined), {
    message: "give exactly one of --replay <transcript.ndjson> or --scenario <file>",
  });
export type SimArgs = z.infer<typeof argsSchema>;

const HELP = [
  "usage: engine-sim --protocol claude-stream-json|codex-app-server (--replay <transcript.ndjson> | --scenario <file>)",
  "                  [--state <file>] [--log-inputs <file>]",
  "",
  "A stand-in for `claude -p --input-format stream-json …` or `codex app-server` on stdin/stdout (docs/engine-sim.md).",
  "",
  "  --protocol <name>        the engine protocol to speak (required)",
  "  --replay <file>          replay a corpus transcript",
  "  --scenario <file>        play a scripted scenario (test/fixtures/engine-scenarios/)",
  "  --state <file>           counts process starts: each start plays the next runtime",
  "  --log-inputs <file>      append every stdin line as received",
  "  -h, --help               this text",
  "",
  "Exit: 0 when stdin ends; 2 when a file cannot be read or does not fit the protocol; 64 on a bad argument.",
].join("\n");

export const engineSimCommandLine: ToolCommandLine<typeof argsSchema> = {
  name: "engine-sim",
  help: HELP,
  options: {
    protocol: { type: "string" },
    replay: { type: "string" },
    scenario: { type: "string" },
    state: { type: "string" },
    "log-inputs": { type: "string" },
  },
  schema: argsSchema,
};

export function parseSimArgs(argv: string[]): SimArgs {
  return readCommandLine(engineSimCommandLine, argv);
}
