import { execFileSync } from "node:child_process";
import { mkdirSync, writeFileSync } from "node:fs";
import { cpus, loadavg, release, totalmem } from "node:os";
import { join } from "node:path";
import { projectRoot } from "../test/helpers/child-process.js";

/** The machine and versions a bench ran on, for its report: a figure means little without them. */
export function machineFacts(redisVersion: string): Record<string, string> {
  const commit = execFileSync("git", ["rev-parse", "--short", "HEAD"], { cwd: projectRoot })
    .toString()
    .trim();
  return {
    cpu: `${cpus().length} × ${cpus()[0]?.model ?? "unknown"}`,
    memory: `${(totalmem() / 1024 ** 3).toFixed(1)} GiB`,
    kernel: release(),
    node: process.version,
    redis: redisVersion,
    lampline: commit,
    "load average at start": loadAverage(),
  };
}

/** 1, 5 and 15 minute load averages: above the core count, other work shared the machine during the run. */
export function loadAverage(): string {
  return loadavg()
    .map((value) => value.toFixed(2))
    .join(" ");
}

/** Writes a bench's raw report to bench/results/<bench>-<start time>.json (not committed); returns the path. */
export function writeBenchResults(bench: string, report: { startedAt: string }): string {
  const dir = join(projectRoot, "bench", "results");
  mkdirSync(dir, { recursive: true });
  const file = join(dir, `${bench}-${report.startedAt.replace(/[:.]/g, "-")}.json`);
  writeFileSync(file, `${JSON.stringify(report, null, 2)}\n`);
  return file;
}
