import { mkdirSync } from "node:fs";
import { join, relative, resolve } from "node:path";
import { z } from "zod";
import { signToken } from "../../libs/auth/tokens.js";
import { freePort } from "../../libs/redis/redis-server-process.js";
import { readCommandLine } from "../cli-args.js";
import { Speaker } from "../lamp-sim/speaker.js";
import { writeDemoAgents } from "./demo-agents.js";
import { DemoLamp } from "./demo-lamp.js";
import { DemoStack } from "./demo-stack.js";
import { OsResults } from "./os-results.js";
import { FAILURE_NOTICE, STORY } from "./story.js";
import { StoryPlay } from "./story-play.js";
import { tellStory } from "./tell-story.js";
import { errorMessage } from "../../libs/errors/error-message.js";

const HELP = [
  "usage: npm run demo [-- --out <dir>] [--port <n>]",
  "",
  "Starts the stack as `npm start` does (every service in one process, its own redis-server), engine-sim agents and",
  "a Lamp, and plays a story: a request; a steering correction merged into one answer; a queued request answered on",
  'its own; a request whose membership cannot be proven; a failed task; a lost playback ack; "say that again".',
  "It narrates each step with the state reached and writes the spoken WAV files (espeak-ng; .txt without it).",
  "",
  "  --out <dir>    where the spoken files, the stack's log and its Redis data go (default .tmp/demo/<time>)",
  "  --port <n>     HTTP port of the stack (default: a free port)",
  "  -h, --help     this text",
  "",
  "On a terminal the stack keeps running after the story (console, OS API) until Ctrl-C. When standard input is not",
  "a terminal it stops after the story. Exit: 0 when every step reached its expected state, 1 otherwise, 64 on a",
  "bad argument.",
].join("\n");

const args = readCommandLine({
  name: "demo",
  help: HELP,
  options: { out: { type: "string" }, port: { type: "string" } },
  schema: z.object({
    out: z.string().min(1).optional(),
    port: z.coerce.number().int().min(1).max(65_535).optional(),
  }),
});

const DEVICE = "demo-lamp";
/** Long enough for a Lamp on a busy machine to ack, short enough that the lost-ack step ends quickly. */
const PLAYBACK_ACK_TIMEOUT_MS = 4_000;
const STEP_WAIT_MS = 90_000;

const write = (line: string) => process.stdout.write(`${line}\n`);
const dir = resolve(args.out ?? join(".tmp", "demo", new Date().toISOString().replace(/[:.]/g, "-")));
const spokenDir = join(dir, "spoken");
mkdirSync(spokenDir, { recursive: true });
const shown = (path: string) => relative(process.cwd(), path) || ".";

const stack = new DemoStack({
  dir,
  port: args.port ?? (await freePort()),
  agentsFile: writeDemoAgents(dir),
  playbackAckTimeoutMs: PLAYBACK_ACK_TIMEOUT_MS,
  failureNotice: FAILURE_NOTICE,
});
const deviceToken = await signToken(stack.secrets.os, { audience: "os", role: "device", sub: DEVICE });
const operatorToken = await signToken(stack.secrets.os, {
  audience: "os",
  role: "operator",
  sub: "demo-operator",
});
const speaker = new Speaker(spokenDir);
const lamp = new DemoLamp(stack.lampUrl, deviceToken, speaker);

/** The Lamp leaves first, then the stack drains and its Redis stops. */
async function stopAll(code: number): Promise<never> {
  await lamp.close();
  await stack.stop();
  process.exit(code);
}
/** Set once the story is over: a Ctrl-C then is the way out, not an interruption. */
const story: { reached?: boolean } = {};
for (const [signal, interrupted] of [
  ["SIGINT", 130],
  ["SIGTERM", 143],
] as const)
  process.once(signal, () => {
    write(`\ndemo: ${signal}; stopping the stack`);
    void stopAll(story.reached === undefined ? interrupted : story.reached ? 0 : 1);
  });

write(`Lampline demo — every service in one process with its own redis-server; log: ${shown(stack.logFile)}`);
try {
  await stack.start();
} catch (error) {
  write(`demo: ${errorMessage(error)} (see ${shown(stack.logFile)})`);
  await stopAll(1);
}
write(`stack ready at ${stack.httpUrl}; the Lamp "${DEVICE}" connects to ${stack.lampUrl}`);
if (!speaker.writesWav) write("espeak-ng is not installed: the Lamp writes what it would say to .txt files");
await lamp.connect();

const play = new StoryPlay({
  lamp,
  results: new OsResults(stack.httpUrl, deviceToken),
  narrate: (line) => write(`    ${line}`),
  waitMs: STEP_WAIT_MS,
});
const reached = await tellStory(STORY, play, write);
story.reached = reached;

write("");
write(
  reached
    ? "demo: every step reached its expected state"
    : "demo: some steps did not reach their expected state",
);
write(`spoken files: ${shown(spokenDir)}`);
write(`console: ${stack.httpUrl}/console/`);
write(`operator token: ${operatorToken}`);
write(`Lamp token (${DEVICE}): ${deviceToken}`);
if (!process.stdin.isTTY) await stopAll(reached ? 0 : 1);
write("The stack keeps running for the console and the OS API; Ctrl-C stops it.");
