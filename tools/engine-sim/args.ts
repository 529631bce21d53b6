import { parseArgs } from "node:util";
import { z } from "zod";

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
  const { values } = parseArgs({
    args: argv,
    options: {
      protocol: { type: "string" },
      replay: { type: "string" },
      scenario: { type: "string" },
      state: { type: "string" },
      "log-inputs": { type: "string" },
    },
    strict: true,
  });
  const parsed = argsSchema.safeParse(values);
  if (!parsed.success) {
    const issue = parsed.error.issues[0];
    throw new Error(`${issue?.path.join(".") || "arguments"}: ${issue?.message ?? "invalid"}\n${USAGE}`);
  }
  return parsed.data;
}
