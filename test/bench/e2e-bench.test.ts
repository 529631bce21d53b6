import { execFile } from "node:child_process";
import { readFileSync, rmSync } from "node:fs";
import { promisify } from "node:util";
import { describe, expect, it } from "vitest";
import { z } from "zod";
import { SERVICE_NAMES } from "../e2e/stack.js";
import { projectRoot } from "../helpers/child-process.js";

const run = promisify(execFile);
const bench = (args: string[], timeout: number) =>
  run(process.execPath, ["--import", "tsx", "bench/run.ts", "e2e", ...args], {
    cwd: projectRoot,
    timeout,
    maxBuffer: 16 * 1024 * 1024,
  });

const latencySchema = z.strictObject({
  count: z.number(),
  p50: z.number().nullable(),
  p90: z.number().nullable(),
  p99: z.number().nullable(),
  max: z.number().nullable(),
});
const reportSchema = z.looseObject({
  rows: z.array(
    z.looseObject({
      system: z.string(),
      offeredPerSecond: z.number(),
      sustainedPerSecond: z.number(),
      latency: latencySchema,
      completionLatency: latencySchema.nullable(),
      cost: z.looseObject({
        cpuMsPerUnit: z.number(),
        redisCpuMsPerUnit: z.number(),
        commandsPerUnit: z.number(),
        roundTripsPerUnit: z.number(),
        perProcess: z.array(z.looseObject({ name: z.string(), peakRssMiB: z.number() })),
      }),
    }),
  ),
  raw: z.looseObject({
    lampline: z.array(
      z.looseObject({
        memoryByKind: z.array(z.strictObject({ kind: z.string(), keys: z.number(), bytes: z.number() })),
      }),
    ),
  }),
  summaries: z.array(
    z.looseObject({
      system: z.string(),
      throughputRatio: z.number(),
      memoryPerResultBytes: z.number().nullable(),
    }),
  ),
});

const latencyFigures = {
  p50: expect.any(Number),
  p90: expect.any(Number),
  p99: expect.any(Number),
  max: expect.any(Number),
};

describe("npm run bench -- e2e", () => {
  it("--help prints the usage and exits 0; a bad --loads exits 64 with one line", async () => {
    const help = await bench(["--help"], 30_000);
    expect(help.stdout).toContain("usage: npm run bench -- e2e");
    const bad = await bench(["--loads", "fast"], 30_000).catch(
      (error: { code: number; stderr: string }) => error,
    );
    expect(bad).toMatchObject({
      code: 64,
      stderr: expect.stringContaining("'fast' is neither a positive rate nor max"),
    });
  }, 60_000);

  it("a tiny split run reports every figure with the baseline beside it", async () => {
    const { stdout } = await bench(
      [
        "--mode",
        "split",
        "--loads",
        "5",
        "--seconds",
        "3",
        "--lamps",
        "2",
        "--agents",
        "2",
        "--steered-agents",
        "2",
        "--no-docs",
      ],
      280_000,
    );
    const file = /^raw: (.+\.json)$/m.exec(stdout)?.[1];
    expect(file).toBeDefined();
    const report = reportSchema.parse(JSON.parse(readFileSync(file as string, "utf8")));
    rmSync(file as string);

    expect(report.rows.map((row) => row.system)).toEqual(["baseline", "lampline split"]);
    for (const row of report.rows) {
      expect(row.offeredPerSecond).toBe(5);
      expect(row.sustainedPerSecond).toBeGreaterThan(0);
      expect(row.latency).toMatchObject(latencyFigures);
      for (const figure of [
        row.cost.cpuMsPerUnit,
        row.cost.redisCpuMsPerUnit,
        row.cost.commandsPerUnit,
        row.cost.roundTripsPerUnit,
      ])
        expect(figure).toBeGreaterThan(0);
    }
    const [baseline, lampline] = report.rows;
    expect(baseline?.completionLatency).toBeNull();
    expect(lampline?.completionLatency).toMatchObject(latencyFigures);
    const processes = lampline?.cost.perProcess ?? [];
    expect(processes.map((one) => one.name)).toEqual([...SERVICE_NAMES, "redis-server", "engine-sim (load)"]);
    for (const one of processes) expect(one.peakRssMiB).toBeGreaterThan(0);
    expect(baseline?.cost.perProcess.map((one) => one.name)).toEqual([
      "stage-1",
      "stage-2",
      "stage-3",
      "stage-4",
      "stage-5",
      "bullmq-worker",
      "redis-server",
    ]);

    expect(report.summaries.map((summary) => summary.system)).toEqual(["baseline", "lampline split"]);
    expect(report.summaries[1]?.throughputRatio).toBeGreaterThan(0);
    expect(report.summaries[1]?.memoryPerResultBytes).toBeGreaterThan(0);
    expect(stdout).toMatch(/^throughput ratio lampline\/baseline: \d+\.\d\d$/m);
    const runKeys = report.raw.lampline[0]?.memoryByKind.find(
      (kind) => kind.kind === "bench-split:os:{d:*}:run:*",
    );
    expect(runKeys?.keys).toBeGreaterThan(0);
    expect(runKeys?.bytes).toBeGreaterThan(0);
    expect(stdout).toMatch(
      /^lampline split: record keys hold \d+\.\d\d KB per result spoken, capped logs and streams \d+\.\d MB in all; largest records: `/m,
    );
    expect(stdout).toContain("| baseline | 5 |");
    expect(stdout).toContain("| lampline split | 5 |");
  }, 300_000);
});
