import { z } from "zod";
import { readCommandLine, type ToolCommandLine } from "../cli-args.js";
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

const HELP = [
  "usage: lamp-sim --url ws://host:port/v1/lamp/ws --token <jwt> [options]",
  "",
  "A Lamp over the real WebSocket: says what it is told, plays each playback.start to a WAV (espeak-ng) or .txt file",
  "and acks it. One JSON line per event on stdout; each run.update as a readable line on stderr.",
  "",
  "  --url <ws-url>               the device-gateway's Lamp socket (required)",
  "  --token <jwt>                a device token: npm run -s token -- --device <id> (required)",
  "  --say <text>                 one voice.request; needs --agent and --machine",
  "  --agent <id> --machine <id>  where --say goes",
  "  --route voice|display|silent reply route (default voice)",
  "  --target <id>                voice target id (default lamp-sim-target)",
  "  --expires-in-ms <n>          voice target expiry from now (default: the OS's VOICE_TARGET_TTL_MS)",
  "  --script <steps.json>        a script of steps instead of --say (docs/playback.md)",
  "  --out-dir <dir>              where spoken files go (default a temp dir)",
  "  --exit-after <n>             exit 0 after n playbacks",
  "  --drop-acks                  play but never ack (a lost ack)",
  "  --disconnect-after-receive   drop the connection when a playback.start arrives",
  "  --reject                     ack every playback.start `rejected`",
  "  --slow-ms <n>                wait n ms before acking `started`",
  "  -h, --help                   this text",
  "",
  "Exit: 0 after --exit-after playbacks or SIGTERM; 1 when the OS closed the connection; 2 when the connection was",
  "refused or a script could not be read; 64 on a bad argument.",
].join("\n");

export const lampSimCommandLine: ToolCommandLine<typeof argsSchema> = {
  name: "lamp-sim",
  help: HELP,
  options: {
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
  schema: argsSchema,
};

export function parseLampSimArgs(argv: string[]): LampSimArgs {
  return readCommandLine(lampSimCommandLine, argv);
}
