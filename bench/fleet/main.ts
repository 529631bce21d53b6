import { execFileSync } from "node:child_process";
import { mkdtempSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { RedisClusterProcess } from "../../libs/redis/redis-cluster-process.js";
import { RedisServerProcess } from "../../libs/redis/redis-server-process.js";
import { loadAverage, machineFacts, writeBenchResults } from "../bench-report.js";
import { readCommandLine } from "../../tools/cli-args.js";
import { fleetBenchCommandLine } from "./cli.js";
import { FleetRedis } from "./fleet-redis.js";
import { perIdleDevice, reportText, type FleetReport } from "./fleet-report.js";
import { runFleet } from "./fleet-run.js";

const log = (line: string) => process.stderr.write(`bench fleet: ${line}\n`);

/** Sockets a process needs beyond one per Lamp: Redis, engines, HTTP probes, files. */
const FD_HEADROOM = 1_000;

/** `npm run bench -- fleet`: see cli.ts for the arguments; prints the tables and where the raw JSON went. */
export async function run(argv: string[]): Promise<void> {
  const args = readCommandLine(fleetBenchCommandLine, argv);
  // This process holds a socket per Lamp, and so do the device-gateway, the router and the harness-gateway.
  const limit = openFileLimit();
  if (limit !== null && args.lamps + FD_HEADROOM > limit)
    throw new Error(
      `${args.lamps} Lamps need about ${args.lamps + FD_HEADROOM} open files per process; ulimit -n is ${limit}` +
        ` (raise it first, e.g. \`ulimit -n ${args.lamps * 2}\` in the shell that runs the bench)`,
    );
  const startedAt = new Date().toISOString();
  const workDir = mkdtempSync(join(tmpdir(), "lampline-fleet-"));
  const target = await startRedis(args.cluster);
  const redis = await FleetRedis.connect(target.urls);
  try {
    const machine: Record<string, string> = {
      ...machineFacts(target.version),
      "open files (ulimit -n)": String(limit ?? "unknown"),
    };
    const fleet = await runFleet(args, { redis, env: target.env, workDir }, log);
    machine["load average at end"] = loadAverage();
    const report: FleetReport = {
      startedAt,
      command: `npm run bench -- fleet ${argv.join(" ")}`.trim(),
      machine,
      settings: { ...args, activeLamps: fleet.activeLamps, redis: args.cluster ? "cluster" : "single" },
      perIdleDevice: perIdleDevice(fleet, args),
      run: fleet,
    };
    const file = writeBenchResults("fleet", report);
    process.stdout.write(`${reportText(report, file)}\n`);
  } finally {
    redis.close();
    await target.stop();
  }
}

interface RedisTarget {
  urls: string[];
  env: Record<string, string>;
  version: string;
  stop(): Promise<void>;
}

async function startRedis(cluster: boolean): Promise<RedisTarget> {
  const version = execFileSync("redis-server", ["--version"]).toString().trim();
  if (!cluster) {
    const server = await RedisServerProcess.start({ appendonly: true, appendfsync: "everysec" });
    return { urls: [server.url], env: { REDIS_URL: server.url }, version, stop: () => server.stop() };
  }
  const nodes = await RedisClusterProcess.start({ masters: 3 });
  const urls = nodes.servers.map((server) => server.url);
  return {
    urls,
    env: { REDIS_URL: urls[0] as string, REDIS_CLUSTER_NODES: nodes.nodesEnv },
    version: `${version} (cluster of ${urls.length} masters)`,
    stop: () => nodes.stop(),
  };
}

function openFileLimit(): number | null {
  try {
    const value = execFileSync("sh", ["-c", "ulimit -n"]).toString().trim();
    return /^\d+$/.test(value) ? Number(value) : null;
  } catch {
    return null;
  }
}
