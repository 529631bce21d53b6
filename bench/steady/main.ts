import { mkdtempSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { Redis } from "ioredis";
import { RedisServerProcess } from "../../libs/redis/redis-server-process.js";
import { readCommandLine } from "../../tools/cli-args.js";
import { machineFacts, writeBenchResults } from "../bench-report.js";
import { connectLamps, DRAIN_MS } from "../e2e/lampline-run.js";
import { BENCH_MACHINE, benchAgents, LamplineStack } from "../e2e/lampline-stack.js";
import { LoadGenerator } from "../e2e/load-generator.js";
import { byRetention, memoryByKind, totalBytes, type MemoryKind } from "../e2e/memory-by-kind.js";
import { readCounters } from "../e2e/redis-stats.js";
import { steadyBenchCommandLine, type SteadyBenchArgs } from "./cli.js";

const log = (line: string) => process.stderr.write(`bench steady: ${line}\n`);

const SAMPLE_MS = 5_000;

interface Sample {
  /** Seconds since the load began. */
  at: number;
  usedMemory: number;
  keys: number;
}

/**
 * Every retention scaled by the same factor, so each keeps its default ratio to the OS's: Harness receipts,
 * results and events a thirtieth (1 day against 30), identity bindings and delivery markers seven thirtieths (7 days),
 * each at least its setting's minimum.
 */
function retentionEnv(retentionSeconds: number): Record<string, string> {
  const harnessSeconds = Math.max(1, Math.round(retentionSeconds / 30));
  const weekSeconds = Math.max(60, Math.round((retentionSeconds * 7) / 30));
  return {
    RESULT_RETENTION_MS: String(retentionSeconds * 1000),
    RECEIPT_RETENTION_SECONDS: String(harnessSeconds),
    RESULT_RETENTION_SECONDS: String(harnessSeconds),
    EVENT_RETENTION_SECONDS: String(harnessSeconds),
    EVIDENCE_BINDING_RETENTION_MS: String(weekSeconds * 1000),
    DELIVERY_MARKER_TTL_SECONDS: String(weekSeconds),
    RETENTION_SWEEP_INTERVAL_MS: "1000",
  };
}

/** Least-squares slope of memory over time, in bytes per minute. */
function slopePerMinute(samples: Sample[]): number {
  const n = samples.length;
  if (n < 2) return 0;
  const meanX = samples.reduce((sum, { at }) => sum + at, 0) / n;
  const meanY = samples.reduce((sum, { usedMemory }) => sum + usedMemory, 0) / n;
  let covariance = 0;
  let variance = 0;
  for (const { at, usedMemory } of samples) {
    covariance += (at - meanX) * (usedMemory - meanY);
    variance += (at - meanX) ** 2;
  }
  return variance === 0 ? 0 : (covariance / variance) * 60;
}

const kb = (bytes: number) => `${(bytes / 1024).toFixed(2)} KB`;
const mb = (bytes: number) => `${(bytes / 1024 / 1024).toFixed(1)} MB`;

/** What the keys hold at the end: per retained result (record kinds) and capped kinds (per device or stream). */
function keyBreakdown(kinds: MemoryKind[], retainedResults: number) {
  const { records, capped } = byRetention(kinds);
  return {
    perRetainedResultBytes: Math.round(totalBytes(records) / retainedResults),
    cappedBytes: totalBytes(capped),
    largest: records.slice(0, 12).map(({ kind, keys, bytes }) => ({
      kind,
      keys,
      bytesPerResult: Math.round(bytes / retainedResults),
    })),
  };
}

export async function run(argv: string[]): Promise<void> {
  const args = readCommandLine(steadyBenchCommandLine, argv);
  const startedAt = new Date().toISOString();
  const server = await RedisServerProcess.start({ appendonly: true, appendfsync: "everysec" });
  const redis = new Redis(server.url, { maxRetriesPerRequest: null });
  const keyPrefix = "bench-steady";
  const agents = benchAgents(8, 4);
  const env = retentionEnv(args["retention-seconds"]);
  try {
    const machine = machineFacts(/redis_version:(\S+)/.exec(await redis.info("server"))?.[1] ?? "unknown");
    log(
      `${args.mode}: starting the services (${Object.entries(env)
        .map(([k, v]) => `${k}=${v}`)
        .join(" ")})`,
    );
    const stack = await LamplineStack.start({
      mode: args.mode,
      redisUrl: server.url,
      keyPrefix,
      workDir: mkdtempSync(join(tmpdir(), "lampline-steady-")),
      agents,
      env,
    });
    const generator = new LoadGenerator(agents, BENCH_MACHINE);
    const lamps = await connectLamps(stack, generator, args.lamps);
    try {
      log(`${args.mode}: warming up`);
      await generator.offer(5, 3, 0, 60_000);
      const before = (await readCounters(redis)).usedMemory;
      const samples: Sample[] = [];
      const began = Date.now();
      const sampler = setInterval(() => {
        void Promise.all([readCounters(redis), redis.dbsize()]).then(([counters, keys]) =>
          samples.push({ at: (Date.now() - began) / 1000, usedMemory: counters.usedMemory, keys }),
        );
      }, SAMPLE_MS);
      log(`${args.mode}: offering ${args.rate} results/s for ${args.seconds} s`);
      const figures = await generator.offer(args.rate, args.seconds, 0, DRAIN_MS);
      clearInterval(sampler);
      const report = analyse(args, figures.sustainedPerSecond, before, samples);
      const breakdown = keyBreakdown(await memoryByKind(redis, keyPrefix), report.retainedResults);
      const full = { startedAt, machine, settings: { ...args, env }, figures, ...report, breakdown };
      const file = writeBenchResults("steady", full);
      process.stdout.write(`${[...summaryLines(full), `raw: ${file}`, ""].join("\n")}`);
    } finally {
      for (const lamp of lamps) lamp.close();
      await stack.stop();
    }
  } finally {
    redis.disconnect();
    await server.stop();
  }
}

/** Memory once retention is reached (a quarter of a retention after it, so the first sweeps have run). */
function analyse(args: SteadyBenchArgs, sustainedPerSecond: number, before: number, samples: Sample[]) {
  const retention = args["retention-seconds"];
  const steady = samples.filter(({ at }) => at >= retention * 1.25);
  const values = steady.map(({ usedMemory }) => usedMemory);
  const mean = values.length === 0 ? 0 : values.reduce((sum, value) => sum + value, 0) / values.length;
  const retainedResults = Math.max(1, Math.round(sustainedPerSecond * retention));
  return {
    usedMemoryBefore: before,
    samples,
    steady: {
      samples: steady.length,
      minBytes: Math.min(...values),
      maxBytes: Math.max(...values),
      meanBytes: Math.round(mean),
      slopeBytesPerMinute: Math.round(slopePerMinute(steady)),
    },
    retainedResults,
    usedMemoryPerRetainedResultBytes: Math.round((mean - before) / retainedResults),
  };
}

function summaryLines(run: {
  settings: SteadyBenchArgs;
  figures: { sustainedPerSecond: number; lost: number };
  usedMemoryBefore: number;
  steady: ReturnType<typeof analyse>["steady"];
  retainedResults: number;
  usedMemoryPerRetainedResultBytes: number;
  breakdown: ReturnType<typeof keyBreakdown>;
}): string[] {
  const { settings, figures, steady, breakdown } = run;
  const head = `lampline ${settings.mode}: ${figures.sustainedPerSecond} results/s sustained, ${figures.lost} lost; OS retention ${settings["retention-seconds"]} s`;
  if (steady.samples < 2)
    return [head, "retention was not reached: run longer than 1.25 retentions (--seconds)"];
  return [
    head,
    `used_memory before the load: ${mb(run.usedMemoryBefore)}; once retention is reached (${steady.samples} samples): ` +
      `${mb(steady.minBytes)}–${mb(steady.maxBytes)}, mean ${mb(steady.meanBytes)}, trend ${mb(steady.slopeBytesPerMinute)}/min`,
    `retained results: ${run.retainedResults}; used_memory per retained result: ${kb(run.usedMemoryPerRetainedResultBytes)}`,
    `keys per retained result: ${kb(breakdown.perRetainedResultBytes)}; capped keys (event logs, run-update logs, ` +
      `pipeline streams): ${mb(breakdown.cappedBytes)} in all`,
    ...breakdown.largest.map(
      ({ kind, keys, bytesPerResult }) => `  ${kb(bytesPerResult).padStart(9)}  ${kind} (${keys} keys)`,
    ),
  ];
}
