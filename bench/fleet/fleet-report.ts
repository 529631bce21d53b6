import type { FleetBenchArgs } from "./cli.js";
import type { FleetRun } from "./fleet-run.js";
import type { FleetSnapshot } from "./fleet-snapshot.js";

export interface FleetReport {
  startedAt: string;
  command: string;
  machine: Record<string, string>;
  settings: FleetBenchArgs & { activeLamps: number; redis: "single" | "cluster" };
  perIdleDevice: Record<string, number>;
  run: FleetRun;
}

const MB = 1024 * 1024;
const mb = (bytes: number) => (bytes / MB).toFixed(1);

function pad(rows: string[][]): string {
  const widths =
    rows[0]?.map((_, column) => Math.max(...rows.map((row) => (row[column] ?? "").length))) ?? [];
  return rows.map((row) => row.map((cell, column) => cell.padEnd(widths[column] ?? 0)).join("  ")).join("\n");
}

/**
 * Bytes per idle device between the small and the large fleet's idle snapshots: each service's RSS and Redis's
 * used_memory, divided by the Lamps added.
 */
export function perIdleDevice(run: FleetRun, args: FleetBenchArgs): Record<string, number> {
  const small = run.snapshots.find((one) => one.phase === `${args["baseline-lamps"]} Lamps idle`);
  const large = run.snapshots.find((one) => one.phase === `${args.lamps} Lamps idle`);
  const added = args.lamps - args["baseline-lamps"];
  if (!small || !large || added === 0) return {};
  const figures: Record<string, number> = {
    "redis used_memory": Math.round((large.redisUsedMemory - small.redisUsedMemory) / added),
  };
  for (const [name, rss] of Object.entries(large.rssBytes))
    figures[`${name} RSS`] = Math.round((rss - (small.rssBytes[name] ?? 0)) / added);
  return figures;
}

const leaseChanges = (snapshot: FleetSnapshot) => {
  const all = Object.values(snapshot.routers);
  const sum = (key: "acquired" | "released" | "lost") => all.reduce((total, one) => total + one[key], 0);
  return `${sum("acquired")}/${sum("released")}/${sum("lost")}`;
};

/** The services whose memory follows the fleet; a service's replicas (`router#2`) are added to it. */
const RSS_COLUMNS = ["device-gateway", "router", "harness-gateway"];

const rssOfService = (snapshot: FleetSnapshot, service: string) =>
  Object.entries(snapshot.rssBytes)
    .filter(([name]) => name === service || name.startsWith(`${service}#`))
    .reduce((total, [, bytes]) => total + bytes, 0);

export function snapshotTable(snapshots: FleetSnapshot[]): string {
  const processes = [...new Set(snapshots.flatMap((one) => Object.keys(one.redisClients.byProcess)))].sort(
    (a, b) => a.localeCompare(b),
  );
  const header = [
    "phase",
    "Lamps",
    "Redis clients",
    ...processes.map((name) => `clients ${name}`),
    ...RSS_COLUMNS.map((name) => `${name} RSS MB`),
    "Redis used MB",
    "idle cmds/s",
    "leases acq/rel/lost",
    "sessions",
  ];
  const rows = snapshots.map((one) => [
    one.phase,
    String(one.devices),
    String(one.redisClients.total),
    ...processes.map((name) => String(one.redisClients.byProcess[name] ?? 0)),
    ...RSS_COLUMNS.map((name) => mb(rssOfService(one, name))),
    mb(one.redisUsedMemory),
    one.idleCommandsPerSecond === null ? "-" : String(one.idleCommandsPerSecond),
    leaseChanges(one),
    String(Object.values(one.routers).reduce((total, router) => total + router.sessions, 0)),
  ]);
  return pad([header, ...rows]);
}

export function loadTable(run: FleetRun): string {
  const header = [
    "Lamps",
    "active",
    "offered/s",
    "sustained/s",
    "request→playback p50/p90/p99/max ms",
    "lost",
    "request errors",
  ];
  const rows = run.loads.map(({ devices, figures }) => {
    const latency = figures.requestToPlayback;
    return [
      String(devices),
      String(Math.min(run.activeLamps, devices)),
      String(figures.offeredPerSecond),
      String(figures.sustainedPerSecond),
      [latency.p50, latency.p90, latency.p99, latency.max].map((value) => value ?? "-").join("/"),
      String(figures.lost),
      JSON.stringify(figures.requestErrors),
    ];
  });
  return pad([header, ...rows]);
}

/** Connections by name: listed in full for the first phase, then only the names whose count changed. */
export function purposeLines(snapshots: FleetSnapshot[]): string[] {
  const list = (counts: Record<string, number>) =>
    Object.entries(counts)
      .map(([purpose, count]) => `${purpose} ${count}`)
      .join(", ");
  return snapshots.map((one, index) => {
    if (index === 0) return `${one.phase}: ${list(one.redisClients.byPurpose)}`;
    const first = snapshots[0]?.redisClients.byPurpose ?? {};
    const names = new Set([...Object.keys(first), ...Object.keys(one.redisClients.byPurpose)]);
    const changed = Object.fromEntries(
      [...names]
        .filter((name) => (first[name] ?? 0) !== (one.redisClients.byPurpose[name] ?? 0))
        .map((name) => [name, one.redisClients.byPurpose[name] ?? 0]),
    );
    return `${one.phase}: ${Object.keys(changed).length === 0 ? "the same" : `changed: ${list(changed)}`}`;
  });
}

export function idleCommandLines(snapshots: FleetSnapshot[]): string[] {
  return snapshots
    .filter((one) => one.idleTopCommands !== null)
    .map(
      (one) =>
        `${one.phase}: ${one.idleCommandsPerSecond}/s — ${Object.entries(one.idleTopCommands ?? {})
          .map(([name, perSecond]) => `${name} ${perSecond}`)
          .join(", ")}`,
    );
}

export function reportText(report: FleetReport, file: string): string {
  const run = report.run;
  return [
    snapshotTable(run.snapshots),
    "",
    loadTable(run),
    "",
    "Redis clients by connection name (lampline:<purpose>):",
    ...purposeLines(run.snapshots).map((line) => `  ${line}`),
    "",
    "Redis commands/s with no load offered (busiest commands/s):",
    ...idleCommandLines(run.snapshots).map((line) => `  ${line}`),
    "",
    "per idle device (large minus small fleet, divided by the Lamps added; every service in the raw JSON):",
    ...Object.entries(report.perIdleDevice)
      .filter(([what]) => what === "redis used_memory" || RSS_COLUMNS.some((name) => what.startsWith(name)))
      .map(([what, bytes]) => `  ${what}: ${(bytes / 1024).toFixed(1)} KB`),
    "",
    `connect (until every Lamp had its router session): ${Object.entries(run.connectSeconds)
      .map(([count, seconds]) => `${count} Lamps ${seconds} s`)
      .join(", ")}; ${
      run.releaseSeconds === null
        ? `${run.sessionsLeftAfterRelease} idle Lamps' sessions still held when the bench stopped waiting`
        : `idle Lamps' sessions let go ${run.releaseSeconds} s after they disconnected`
    }`,
    `raw: ${file}`,
  ].join("\n");
}
