import { z } from "zod";
import { parseToolArgs } from "../cli-args.js";
import { replyRouteSchema } from "../../libs/contract/lamp-wire.js";

const count = z.coerce.number().int().nonnegative();

const argsSchema = z
  .strictObject({
    url: z.string().regex(/^wss?:\/\//, "a ws:// or wss:// URL"),
    token: z.string().min(1),
    say: z.string().min(1).optional(),
    agent: z.string().min(1).optional(),
    machine: z.string().min(1).optional(),
    route: replyRouteSchema.default("voice"),
    target: z.string().min(1).max(128).default("lamp-sim-target"),
    "expires-in-ms": count.optional(),
    script: z.string().min(1).optional(),
    "out-dir": z.string().min(1).optional(),
    "drop-acks": z.boolean().default(false),
    "disconnect-after-receive": z.boolean().default(false),
    reject: z.boolean().default(false),
    "slow-ms": count.default(0),
    "exit-after": count.optional(),
  })
  .refine((args) => args.say === undefined || (args.agent !== undefined && args.machine !== undefined), {
    message: "--say needs --agent and --machine",
  })
  .refine((args) => !(args.say !== undefined && args.script !== undefined), {
    message: "give --say or --script, not both",
  });
export type LampSimArgs = z.infer<typeof argsSchema>;

export const USAGE = [
  "usage: lamp-sim --url ws://host:port/v1/lamp/ws --token <jwt>",
  "  [--say <text> --agent <id> --machine <id> [--route voice|display|silent] [--target <id>] [--expires-in-ms <n>]]",
  "  [--script <steps.json>] [--out-dir <dir>] [--exit-after <playbacks>]",
  "  [--drop-acks] [--disconnect-after-receive] [--reject] [--slow-ms <n>]",
].join("\n");

export function parseLampSimArgs(argv: string[]): LampSimArgs {
  return parseToolArgs(
    argv,
    {
      url: { type: "string" },
      token: { type: "string" },
      say: { type: "string" },
      agent: { type: "string" },
      machine: { type: "string" },
      route: { type: "string" },
      target: { type: "string" },
      "expires-in-ms": { type: "string" },
      script: { type: "string" },
      "out-dir": { type: "string" },
      "drop-acks": { type: "boolean" },
      "disconnect-after-receive": { type: "boolean" },
      reject: { type: "boolean" },
      "slow-ms": { type: "string" },
      "exit-after": { type: "string" },
    },
    argsSchema,
    USAGE,
  );
}
