import { mkdtempSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { Redis } from "ioredis";
import { RedisServerProcess } from "../../libs/redis/redis-server-process.js";
import { loadAverage, machineFacts, writeBenchResults } from "../bench-report.js";
import { readCommandLine } from "../../tools/cli-args.js";
import { runBaseline } from "../baseline/baseline-run.js";
import { e2eBenchCommandLine, type E2eBenchArgs } from "./cli.js";
import { runLampline, systemName, warmUpOf, type LamplineModeRun } from "./lampline-run.js";
import { benchAgents, type StackMode } from "./lampline-stack.js";
import { fillRetainedResults } from "../retained/fill.js";
import { byRetention, totalBytes } from "./memory-by-kind.js";
import { writePerformanceDoc } from "./performance-doc.js";
import {
  baselineRows,
  lamplineRows,
  memoryKindLines,
  processTable,
  summarise,
  summaryLines,
  table,
  type E2eReport,
} from "./report.js";

const log = (line: string) => process.stderr.write(`bench e2e: ${line}\n`);

/** `npm run bench -- e2e`: see cli.ts for the arguments; prints the table and where the raw JSON went. */
export async function run(argv: string[]): Promise<void> {
  const args = readCommandLine(e2eBenchCommandLine, argv);
  const startedAt = new Date().toISOString();
  const workDir = mkdtempSync(join(tmpdir(), "lampline-bench-"));
  const server = await RedisServerProcess.start({ appendonly: true, appendfsync: "everysec" });
  const redis = new Redis(server.url, { maxRetriesPerRequest: null });
  const redisPid = server.pid ?? 0;
  const agents = benchAgents(args.agents, args["steered-agents"]);
  const modes: StackMode[] = args.mode === "both" ? ["split", "all-in-one"] : [args.mode];
  try {
    const machine = machineFacts(/redis_version:(\S+)/.exec(await redis.info("server"))?.[1] ?? "unknown");
    const baseline = await runBaseline(
      redis,
      redisPid,
      {
        redisUrl: server.url,
        keyPrefix: "bench-baseline",
        loads: args.loads.fixed,
        max: args.loads.max,
        seconds: args.seconds,
        warmUpSeconds: warmUpOf(args.seconds),
      },
      log,
    );
    const runs: LamplineModeRun[] = [];
    let prefill: E2eReport["prefill"] = null;
    for (const mode of modes)
      for (const retained of args["prefill-results"] > 0 ? [0, args["prefill-results"]] : [0]) {
        await redis.flushall();
        const keyPrefix = `bench-${mode}`;
        if (retained > 0) {
          log(`${mode}: storing ${retained} synthetic retained results`);
          prefill = await fillRetainedResults(redis, keyPrefix, retained);
        }
        runs.push(
          await runLampline(
            mode,
            redis,
            redisPid,
            {
              loads: args.loads.fixed,
              max: args.loads.max,
              seconds: args.seconds,
              lamps: args.lamps,
              agents,
              redisUrl: server.url,
              keyPrefix,
              workDir,
              retained,
            },
            log,
          ),
        );
      }
    const report = assemble(startedAt, machine, args, baseline, runs, prefill);
    const file = writeBenchResults("e2e", report);
    process.stdout.write(
      [
        table(report.rows),
        "",
        processTable(report.summaries),
        "",
        ...summaryLines(report),
        "",
        ...memoryKindLines(runs),
        "",
        `raw: ${file}`,
        "",
      ].join("\n"),
    );
    report.machine["load average at end"] = loadAverage();
    if (!args["no-docs"]) await writePerformanceDoc(report, `npm run bench -- e2e ${argv.join(" ")}`.trim());
  } finally {
    redis.disconnect();
    await server.stop();
  }
}

function assemble(
  startedAt: string,
  machine: Record<string, string>,
  args: E2eBenchArgs,
  baseline: Awaited<ReturnType<typeof runBaseline>>,
  runs: LamplineModeRun[],
  prefill: E2eReport["prefill"],
): E2eReport {
  const rows = [...baselineRows(baseline), ...runs.flatMap(lamplineRows)];
  const baselineMax = Math.max(0, ...baseline.map((load) => load.sustainedPerSecond));
  // Per result spoken: what the record keys hold at the end (capped logs and streams apart, see byRetention). A
  // short run retains everything it made, the Harness's one-day records included: an upper figure, which
  // `npm run bench -- steady` measures once retention is reached.
  const memory = new Map(
    runs.map((one) => [
      systemName(one),
      one.memory.results === 0
        ? 0
        : Math.round(totalBytes(byRetention(one.memoryByKind).records) / one.memory.results),
    ]),
  );
  const summaries = summarise(rows, baselineMax, memory);
  const headline =
    summaries.find((summary) => summary.system === "lampline split") ??
    summaries.find((summary) => summary.system !== "baseline");
  return {
    startedAt,
    machine,
    settings: {
      mode: args.mode,
      loads: [...args.loads.fixed, ...(args.loads.max ? ["max"] : [])],
      seconds: args.seconds,
      warmUpSeconds: warmUpOf(args.seconds),
      lamps: args.lamps,
      agents: args.agents,
      steeredAgents: args["steered-agents"],
      prefillResults: args["prefill-results"],
    },
    rows,
    summaries,
    baselineMaxPerSecond: baselineMax,
    throughputRatio: headline?.throughputRatio ?? 0,
    prefill,
    retainedCost: runs
      .filter((one) => one.retained > 0)
      .map((one) => {
        const best = (run: LamplineModeRun | undefined) =>
          Math.max(0, ...(run?.loads ?? []).map((load) => load.sustainedPerSecond));
        const without = best(runs.find((other) => other.mode === one.mode && other.retained === 0));
        const withRetained = best(one);
        return {
          mode: one.mode,
          retained: one.retained,
          without,
          with: withRetained,
          throughputCost: without === 0 ? 0 : Math.round((1 - withRetained / without) * 1000) / 1000,
        };
      }),
    raw: { baseline, lampline: runs },
  };
}
