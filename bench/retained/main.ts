import { mkdtempSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { Redis } from "ioredis";
import { RedisServerProcess } from "../../libs/redis/redis-server-process.js";
import { readCommandLine } from "../../tools/cli-args.js";
import { benchAgents, LamplineStack } from "../e2e/lampline-stack.js";
import { retainedBenchCommandLine } from "./cli.js";
import { fillRetainedResults } from "./fill.js";
import { measureIdle, type IdleFigures } from "./idle-window.js";

const KEY_PREFIX = "bench";
const log = (line: string) => process.stderr.write(`bench retained: ${line}\n`);

const slowest = (figures: IdleFigures) =>
  figures.slowestCommands.map(([name, ms]) => `${name} ${ms.toFixed(2)}`).join(", ");

const row = (label: string, before: string, after: string) =>
  `${label.padEnd(34)} ${before.padStart(14)} ${after.padStart(14)}`;

function report(results: number, before: IdleFigures, after: IdleFigures): string {
  const mb = (bytes: number) => `${(bytes / 1024 / 1024).toFixed(1)} MB`;
  return [
    row("", "before fill", `after ${results.toLocaleString("en")}`),
    row("idle window (s)", before.seconds.toFixed(1), after.seconds.toFixed(1)),
    row("Redis CPU (ms per s)", before.redisCpuMsPerSecond.toFixed(2), after.redisCpuMsPerSecond.toFixed(2)),
    row(
      "of it main thread (ms per s)",
      before.mainThreadMsPerSecond.toFixed(2),
      after.mainThreadMsPerSecond.toFixed(2),
    ),
    row("Redis commands per s", before.commandsPerSecond.toFixed(1), after.commandsPerSecond.toFixed(1)),
    row("in commands (ms per s)", before.commandMsPerSecond.toFixed(2), after.commandMsPerSecond.toFixed(2)),
    row("slowest commands (ms per s)", slowest(before), slowest(after)),
    row("SCAN calls in the window", String(before.scanCalls), String(after.scanCalls)),
    row("keys", before.keys.toLocaleString("en"), after.keys.toLocaleString("en")),
    row("used_memory", mb(before.usedMemoryBytes), mb(after.usedMemoryBytes)),
  ].join("\n");
}

/** `npm run bench -- retained`: see cli.ts. */
export async function run(argv: string[]): Promise<void> {
  const args = readCommandLine(retainedBenchCommandLine, argv);
  const workDir = mkdtempSync(join(tmpdir(), "lampline-bench-retained-"));
  const server = await RedisServerProcess.start({ appendonly: true, appendfsync: "everysec" });
  const redis = new Redis(server.url);
  let stack: LamplineStack | undefined;
  try {
    if (args.bare) log(`no services (--bare): redis-server alone; idle window of ${args.seconds} s`);
    else {
      stack = await LamplineStack.start({
        mode: args.mode,
        redisUrl: server.url,
        keyPrefix: KEY_PREFIX,
        workDir,
        agents: benchAgents(2, 0),
      });
      log(`lampline (${args.mode}) up; idle window of ${args.seconds} s`);
    }
    const before = await measureIdle(redis, args.seconds);
    log(`storing ${args.results} retained results`);
    const fill = await fillRetainedResults(redis, KEY_PREFIX, args.results);
    log(
      `stored in ${fill.seconds.toFixed(0)} s over ${fill.devices} devices, AOF rewrite settled ${fill.aofSettleSeconds.toFixed(0)} s later`,
    );
    const after = await measureIdle(redis, args.seconds);
    process.stdout.write(`${report(args.results, before, after)}\n`);
  } finally {
    await stack?.stop();
    redis.disconnect();
    await server.stop();
  }
}
