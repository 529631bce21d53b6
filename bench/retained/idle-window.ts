import type { Redis } from "ioredis";
import { sleep } from "../../libs/timing/sleep.js";

/** What Redis did over one idle window, from INFO deltas. */
export interface IdleFigures {
  seconds: number;
  /** used_cpu_sys + used_cpu_user spent in the window, per second of wall time (ms/s = thousandths of a core). */
  redisCpuMsPerSecond: number;
  /** The part of it on Redis's main thread (the rest: background threads such as AOF fsync and file deletion). */
  mainThreadMsPerSecond: number;
  commandsPerSecond: number;
  /** Time Redis spent executing commands (INFO commandstats usec), per second of wall time. */
  commandMsPerSecond: number;
  /** The commands that took the most of that time, ms per second each, most first. */
  slowestCommands: [string, number][];
  scanCalls: number;
  keys: number;
  usedMemoryBytes: number;
}

const field = (info: string, name: string) =>
  Number(new RegExp(`^${name}:([\\d.]+)`, "m").exec(info)?.[1] ?? 0);

/** The bench's own reads (three INFO per snapshot, one DBSIZE): not the services' idle work. */
const OWN_COMMANDS = new Set(["info", "dbsize"]);

/** Microseconds spent per command name so far. */
function commandUsec(commandstats: string): Map<string, number> {
  const usec = new Map<string, number>();
  for (const match of commandstats.matchAll(/^cmdstat_([^:]+):calls=\d+,usec=(\d+)/gm)) {
    const name = match[1] as string;
    if (!OWN_COMMANDS.has(name)) usec.set(name, Number(match[2]));
  }
  return usec;
}

async function snapshot(redis: Redis) {
  const [cpu, stats, commands] = await Promise.all([
    redis.info("cpu"),
    redis.info("stats"),
    redis.info("commandstats"),
  ]);
  return {
    at: performance.now(),
    cpuSeconds: field(cpu, "used_cpu_sys") + field(cpu, "used_cpu_user"),
    mainThreadSeconds: field(cpu, "used_cpu_sys_main_thread") + field(cpu, "used_cpu_user_main_thread"),
    commands: field(stats, "total_commands_processed"),
    scans: Number(/cmdstat_scan:calls=(\d+)/.exec(commands)?.[1] ?? 0),
    usec: commandUsec(commands),
  };
}

/** Measures Redis over `seconds` of whatever the services do on their own (nothing is sent to them). */
export async function measureIdle(redis: Redis, seconds: number): Promise<IdleFigures> {
  const first = await snapshot(redis);
  await sleep(seconds * 1000);
  const last = await snapshot(redis);
  const wall = (last.at - first.at) / 1000;
  const memory = await redis.info("memory");
  const spent = [...last.usec].map(([name, usec]): [string, number] => [
    name,
    (usec - (first.usec.get(name) ?? 0)) / 1000 / wall,
  ]);
  return {
    seconds: wall,
    redisCpuMsPerSecond: ((last.cpuSeconds - first.cpuSeconds) * 1000) / wall,
    mainThreadMsPerSecond: ((last.mainThreadSeconds - first.mainThreadSeconds) * 1000) / wall,
    // The three INFO calls of the closing snapshot are the bench's own: not counted.
    commandsPerSecond: (last.commands - first.commands - 3) / wall,
    commandMsPerSecond: spent.reduce((sum, [, ms]) => sum + ms, 0),
    slowestCommands: spent
      .filter(([, ms]) => ms > 0)
      .sort(([, a], [, b]) => b - a)
      .slice(0, 3),
    scanCalls: last.scans - first.scans,
    keys: await redis.dbsize(),
    usedMemoryBytes: field(memory, "used_memory"),
  };
}
