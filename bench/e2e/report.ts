import type { BaselineLoad } from "../baseline/baseline-run.js";
import type { RetainedFill } from "../retained/fill.js";
import type { LatencySummary } from "./latency.js";
import { systemName, type LamplineLoad, type LamplineModeRun } from "./lampline-run.js";
import type { WindowCost } from "./measured-window.js";
import { byRetention, totalBytes } from "./memory-by-kind.js";

/** The processes whose CPU is lampline's cost (the engines are the load, not the system under test). */
const LOAD_PROCESSES = new Set(["engine-sim (load)"]);

/** Per-result (per-message) cost of one window. */
export interface UnitCost {
  cpuMsPerUnit: number;
  redisCpuMsPerUnit: number;
  commandsPerUnit: number;
  roundTripsPerUnit: number;
  topCommands: Array<[string, number]>;
  perProcess: Array<{ name: string; cpuMsPerUnit: number; peakRssMiB: number }>;
}

export function unitCost(cost: WindowCost, units: number): UnitCost {
  const per = (value: number) => (units === 0 ? 0 : round(value / units));
  const system = cost.processes.filter((one) => !LOAD_PROCESSES.has(one.name));
  return {
    cpuMsPerUnit: per(system.reduce((sum, one) => sum + one.cpuMs, 0)),
    redisCpuMsPerUnit: per(cost.processes.find((one) => one.name === "redis-server")?.cpuMs ?? 0),
    commandsPerUnit: per(cost.redis.commands),
    roundTripsPerUnit: per(cost.redis.roundTrips),
    topCommands: Object.entries(cost.redis.byCommand)
      .sort(([, a], [, b]) => b - a)
      .slice(0, 8)
      .map(([name, calls]) => [name, per(calls)]),
    perProcess: cost.processes.map((one) => ({
      name: one.name,
      cpuMsPerUnit: per(one.cpuMs),
      peakRssMiB: round(one.peakRssBytes / 1024 / 1024),
    })),
  };
}

/** One row of the side-by-side table: one offered load of one system. */
export interface ReportRow {
  system: string;
  kind: "fixed" | "max-step";
  offeredPerSecond: number;
  sustainedPerSecond: number;
  /** Lampline: Lamp request → playback.start; baseline: offered → processed by the worker. */
  latency: LatencySummary;
  /** Lampline only: engine completion → playback.start. */
  completionLatency: LatencySummary | null;
  lost: number;
  steeredShare: number | null;
  cost: UnitCost;
}

export interface ModeSummary {
  system: string;
  maxSustainedPerSecond: number;
  throughputRatio: number;
  /** Costs at the load that sustained the most. */
  atMax: UnitCost;
  memoryPerResultBytes: number | null;
}

export interface E2eReport {
  startedAt: string;
  machine: Record<string, string>;
  settings: Record<string, unknown>;
  rows: ReportRow[];
  summaries: ModeSummary[];
  baselineMaxPerSecond: number;
  /** The figure of the ratio line: split when it ran, else all-in-one. */
  throughputRatio: number;
  prefill: RetainedFill | null;
  /** Per mode run with a prefill: max sustained with the retained results against without, same invocation. */
  retainedCost: Array<{
    mode: string;
    retained: number;
    without: number;
    with: number;
    throughputCost: number;
  }>;
  raw: { baseline: BaselineLoad[]; lampline: LamplineModeRun[] };
}

export function lamplineRows(run: LamplineModeRun): ReportRow[] {
  return run.loads.map((load: LamplineLoad) => ({
    system: systemName(run),
    kind: load.kind,
    offeredPerSecond: load.offeredPerSecond,
    sustainedPerSecond: load.sustainedPerSecond,
    latency: load.requestToPlayback,
    completionLatency: load.completionToPlayback,
    lost: load.lost,
    steeredShare: load.steeredShare,
    cost: unitCost(load.cost, load.spoken),
  }));
}

export function baselineRows(loads: BaselineLoad[]): ReportRow[] {
  return loads.map((load) => ({
    system: "baseline",
    kind: load.kind,
    offeredPerSecond: load.offeredPerSecond,
    sustainedPerSecond: load.sustainedPerSecond,
    latency: load.latency,
    completionLatency: null,
    lost: load.messagesSent - load.completed,
    steeredShare: null,
    cost: unitCost(load.cost, load.completed),
  }));
}

export function summarise(
  rows: ReportRow[],
  baselineMax: number,
  memory: Map<string, number>,
): ModeSummary[] {
  const systems = [...new Set(rows.map((row) => row.system))];
  return systems.map((system) => {
    const own = rows.filter((row) => row.system === system);
    const best = own.reduce((a, b) => (b.sustainedPerSecond > a.sustainedPerSecond ? b : a));
    return {
      system,
      maxSustainedPerSecond: best.sustainedPerSecond,
      throughputRatio: baselineMax === 0 ? 0 : round(best.sustainedPerSecond / baselineMax, 4),
      atMax: best.cost,
      memoryPerResultBytes: memory.get(system) ?? null,
    };
  });
}

const ms = (value: number | null) =>
  value === null ? "—" : value >= 100 ? value.toFixed(0) : value.toFixed(1);
const latency = (summary: LatencySummary | null) =>
  summary === null ? "—" : `${ms(summary.p50)}/${ms(summary.p90)}/${ms(summary.p99)}/${ms(summary.max)}`;

/** The side-by-side table, one line per offered load (markdown, so the same text goes into the docs). */
export function table(rows: ReportRow[]): string {
  const header = [
    "system",
    "offered/s",
    "sustained/s",
    "request→playback p50/p90/p99/max ms",
    "completion→playback p50/p90/p99/max ms",
    "CPU ms/unit",
    "Redis CPU ms/unit",
    "cmds/unit",
    "round trips/unit",
    "lost",
  ];
  const lines = rows.map((row) => [
    row.system,
    `${row.offeredPerSecond}${row.kind === "max-step" ? " (max)" : ""}`,
    row.sustainedPerSecond.toFixed(1),
    latency(row.latency),
    latency(row.completionLatency),
    row.cost.cpuMsPerUnit.toFixed(2),
    row.cost.redisCpuMsPerUnit.toFixed(2),
    row.cost.commandsPerUnit.toFixed(1),
    row.cost.roundTripsPerUnit.toFixed(1),
    String(row.lost),
  ]);
  return [header, header.map(() => "---"), ...lines].map((cells) => `| ${cells.join(" | ")} |`).join("\n");
}

/** Per-process CPU per unit and peak RSS at each system's best load. */
export function processTable(summaries: ModeSummary[]): string {
  const lines = summaries.flatMap((summary) =>
    summary.atMax.perProcess.map((one) => [
      summary.system,
      one.name,
      one.cpuMsPerUnit.toFixed(2),
      one.peakRssMiB.toFixed(0),
    ]),
  );
  const header = ["system", "process", "CPU ms/unit at max", "peak RSS MiB"];
  return [header, header.map(() => "---"), ...lines].map((cells) => `| ${cells.join(" | ")} |`).join("\n");
}

export function summaryLines(report: E2eReport): string[] {
  return [
    ...report.summaries.map(
      (summary) =>
        `${summary.system}: max sustained ${summary.maxSustainedPerSecond.toFixed(1)}/s` +
        (summary.system === "baseline" ? "" : ` (ratio to baseline ${summary.throughputRatio.toFixed(3)})`) +
        `; at max ${summary.atMax.cpuMsPerUnit.toFixed(2)} ms CPU (Redis ${summary.atMax.redisCpuMsPerUnit.toFixed(2)}),` +
        ` ${summary.atMax.commandsPerUnit.toFixed(1)} commands, ${summary.atMax.roundTripsPerUnit.toFixed(1)} round trips per unit` +
        (summary.memoryPerResultBytes === null
          ? ""
          : `; Redis memory per retained result ${(summary.memoryPerResultBytes / 1024).toFixed(2)} KB (record keys)`) +
        `; top commands per unit: ${summary.atMax.topCommands.map(([name, calls]) => `${name} ${calls}`).join(", ")}`,
    ),
    ...report.retainedCost.map(
      (cost) =>
        `${cost.mode} with ${cost.retained} retained results: max sustained ${cost.with.toFixed(1)}/s against ` +
        `${cost.without.toFixed(1)}/s without (throughput cost ${(cost.throughputCost * 100).toFixed(1)} %)`,
    ),
    `throughput ratio lampline/baseline: ${report.throughputRatio.toFixed(2)}`,
  ];
}

const round = (value: number, digits = 2) => Math.round(value * 10 ** digits) / 10 ** digits;

/** Per mode run: the key shapes holding the most memory at its end, in bytes per result spoken. */
export function memoryKindLines(runs: LamplineModeRun[], top = 8): string[] {
  return runs.map((run) => {
    const per = (bytes: number) => (run.memory.results === 0 ? 0 : bytes / run.memory.results);
    const kb = (bytes: number) => `${(per(bytes) / 1024).toFixed(2)} KB`;
    const { records, capped } = byRetention(run.memoryByKind);
    const largest = records
      .slice(0, top)
      .map((kind) => `\`${kind.kind}\` ${kb(kind.bytes)} (${kind.keys} keys)`);
    return (
      `${systemName(run)}: record keys hold ${kb(totalBytes(records))} per result spoken, capped logs and streams ` +
      `${(totalBytes(capped) / 1024 / 1024).toFixed(1)} MB in all; largest records: ${largest.join(", ")}`
    );
  });
}
