import { z } from "zod";
import { parseToolArgs } from "../cli-args.js";

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

export const USAGE =
  "usage: engine-sim --protocol claude-stream-json|codex-app-server (--replay <transcript.ndjson> | --scenario <file>) [--state <file>] [--log-inputs <file>]";

export function parseSimArgs(argv: string[]): SimArgs {
  return parseToolArgs(
    argv,
    {
      protocol: { type: "string" },
      replay: { type: "string" },
      scenario: { type: "string" },
      state: { type: "string" },
      "log-inputs": { type: "string" },
    },
    argsSchema,
    USAGE,
  );
}
