import { execFileSync } from "node:child_process";
import { createHash } from "node:crypto";
import { once } from "node:events";
import { readdirSync, readFileSync } from "node:fs";
import { connect, type Socket } from "node:net";
import { resolve } from "node:path";
import { Redis } from "ioredis";
import { z } from "zod";
import { LuaScript } from "../../libs/redis/lua-script.js";
import { RedisServerProcess } from "../../libs/redis/redis-server-process.js";
import { E2EStack, MACHINE, SERVICE_NAMES } from "../e2e/stack.js";
import type { TestLamp } from "../e2e/test-lamp.js";
import { DeviceProbe } from "../e2e/acceptance/acceptance-kit.js";
import { projectRoot } from "../helpers/child-process.js";

/**
 * Redis work and CPU per engine result through the whole stack (issue 16, "work per result"): every service its own
 * process on a private redis-server with AOF everysec, Lamps over the real WebSocket acking every playback. Lamps of
 * single-answer agents ask one question after another; steered agents answer two inputs with one result. The
 * figures are deltas over the load window minus the idle rate of the same stack measured just before it (blocking
 * reads and timers cost something while nothing happens).
 */
export interface WorkPerResultOptions {
  /** Lamps asking one single-answer agent each (half Claude, half Codex). */
  singleLamps: number;
  /** Questions each of those Lamps asks, one after the other. */
  questionsPerLamp: number;
  /** Lamps whose agent folds/steers a second input into the first turn: one result for two inputs (once each). */
  steeredLamps: number;
  /** How long the idle rate is measured. */
  idleMs?: number;
  /**
   * Watch the load window with MONITOR to count commands clients sent (not those a Lua script ran) by process.
   * MONITOR costs Redis CPU: measure CPU without it.
   */
  monitor?: boolean;
}

export interface WorkPerResult {
  results: number;
  inputs: number;
  loadMs: number;
  /** Redis commands per result, by command (idle rate subtracted), sorted by count. */
  commandsByName: Record<string, number>;
  commands: number;
  /** Client reads Redis processed (one per batch of requests that arrived together): round trips. */
  roundTrips: number;
  /** With `monitor`: commands sent by clients (a pipeline counts each, a script is one), by process. */
  clientCommandsByProcess?: Record<string, number>;
  /** With `monitor`: the client commands most sent per result, as `<process> <command>` (where to cut next). */
  topClientCommands?: Record<string, number>;
  /** With `monitor`: every Redis command per result (those a script ran counted under it), by process. */
  redisCommandsByProcess?: Record<string, number>;
  /** With `monitor`: the scripts that cost Redis the most commands per result, as `<process> <script>`. */
  topScripts?: Record<string, number>;
  clientCommands?: number;
  /** CPU ms per result by process (a service with its children, e.g. engine-runner with its engines; redis). */
  cpuMsByProcess: Record<string, number>;
  cpuMs: number;
}

interface Sample {
  at: number;
  calls: Map<string, number>;
  /** Every command but this probe's INFO. */
  commands: number;
  reads: number;
  cpuTicks: Map<string, number>;
}

const TICK_MS = 10; // USER_HZ is 100 on Linux

export async function measureWorkPerResult(options: WorkPerResultOptions): Promise<WorkPerResult> {
  const redisServer = await RedisServerProcess.start({ appendonly: true, appendfsync: "everysec" });
  const probe = new Redis(redisServer.url);
  let stack: E2EStack | undefined;
  try {
    const singles = Array.from({ length: options.singleLamps }, (_, index) => ({
      agentId: `single-${index}`,
      ...(index % 2 === 0
        ? { protocol: "claude-stream-json" as const, scenario: "claude-answer-each-input" }
        : { protocol: "codex-app-server" as const, scenario: "codex-answer-each-input" }),
    }));
    const steered = Array.from({ length: options.steeredLamps }, (_, index) => ({
      agentId: `steered-${index}`,
      ...(index % 2 === 0
        ? { protocol: "claude-stream-json" as const, scenario: "claude-steer-folded-at-tool-boundary" }
        : { protocol: "codex-app-server" as const, scenario: "codex-steer-merged" }),
    }));
    stack = await E2EStack.start({
      label: "work-per-result",
      redisUrl: redisServer.url,
      startTimeoutMs: 180_000,
      agents: [...singles, ...steered],
      // Long blocks: an idle consumer costs one read per block, not five a second.
      env: { STREAM_BLOCK_MS: "5000" },
    });
    const running = stack;
    const lamps = new Map<string, TestLamp>();
    for (const agent of [...singles, ...steered])
      lamps.set(agent.agentId, await running.lamp(`lamp-${agent.agentId}`));
    // Every agent's engine warms up (first turn) outside the window: one answer each, then idle.
    await Promise.all(
      singles.map(async ({ agentId }) => {
        await lamps.get(agentId)?.say({ agentId, machineId: MACHINE, text: "warm up" });
        await lamps.get(agentId)?.waitForUtterances(1, 120_000);
      }),
    );
    await Promise.all(
      [...lamps.keys()].map((agentId) => new DeviceProbe(running, `lamp-${agentId}`).settled(120_000)),
    );
    const idleMs = options.idleMs ?? 4_000;
    const idleStart = await sample(probe, running, redisServer);
    await new Promise((resolve) => setTimeout(resolve, idleMs));
    const idleEnd = await sample(probe, running, redisServer);

    const monitor = options.monitor ? await ClientCommandCounter.start(running, redisServer) : undefined;
    const loadStart = await sample(probe, running, redisServer);
    await Promise.all([
      ...singles.map(async ({ agentId }) => {
        const lamp = lamps.get(agentId);
        if (!lamp) throw new Error(`no lamp for ${agentId}`);
        for (let question = 1; question <= options.questionsPerLamp; question += 1) {
          await lamp.say({ agentId, machineId: MACHINE, text: `question ${question}` });
          await lamp.waitForUtterances(1 + question, 120_000);
        }
      }),
      ...steered.map(async ({ agentId }) => {
        const lamp = lamps.get(agentId);
        if (!lamp) throw new Error(`no lamp for ${agentId}`);
        await lamp.say({ agentId, machineId: MACHINE, text: "Build a house." });
        await lamp.say({ agentId, machineId: MACHINE, text: "Make the roof red." });
        await lamp.waitForUtterances(1, 120_000);
      }),
    ]);
    // No probe of the stack's keys inside the window (it would be counted): wait until Redis is as quiet as idle.
    await untilQuiet(probe, (idleEnd.commands - idleStart.commands) / (idleEnd.at - idleStart.at));
    const loadEnd = await sample(probe, running, redisServer);
    const results = options.singleLamps * options.questionsPerLamp + options.steeredLamps;
    const work = perResult(idleStart, idleEnd, loadStart, loadEnd, results, {
      inputs: options.singleLamps * options.questionsPerLamp + 2 * options.steeredLamps,
    });
    if (!monitor) return work;
    const { byProcess, byProcessAndCommand, allByProcess, byScript } = monitor.stop();
    const perResultOf = (counts: Map<string, number>, top = counts.size) =>
      Object.fromEntries(
        [...counts.entries()]
          .sort(([, a], [, b]) => b - a)
          .slice(0, top)
          .map(([name, count]) => [name, round(count / results)]),
      );
    const clientCommands = round([...byProcess.values()].reduce((sum, count) => sum + count, 0) / results);
    return {
      ...work,
      clientCommandsByProcess: perResultOf(byProcess),
      topClientCommands: perResultOf(byProcessAndCommand, 80),
      clientCommands,
      redisCommandsByProcess: perResultOf(allByProcess),
      topScripts: perResultOf(byScript, 30),
    };
  } finally {
    probe.disconnect();
    await stack?.stop();
    await redisServer.stop();
  }
}

function perResult(
  idleStart: Sample,
  idleEnd: Sample,
  loadStart: Sample,
  loadEnd: Sample,
  results: number,
  { inputs }: { inputs: number },
): WorkPerResult {
  const idleMs = idleEnd.at - idleStart.at;
  const loadMs = loadEnd.at - loadStart.at;
  const net = (idle: number, load: number) => Math.max(0, load - (idle * loadMs) / idleMs) / results;
  const delta = (from: Map<string, number>, to: Map<string, number>, name: string) =>
    (to.get(name) ?? 0) - (from.get(name) ?? 0);
  const commandsByName: Record<string, number> = {};
  for (const name of loadEnd.calls.keys()) {
    const value = net(
      delta(idleStart.calls, idleEnd.calls, name),
      delta(loadStart.calls, loadEnd.calls, name),
    );
    if (value >= 0.05) commandsByName[name] = round(value);
  }
  const cpuMsByProcess: Record<string, number> = {};
  for (const name of loadEnd.cpuTicks.keys())
    cpuMsByProcess[name] = round(
      net(
        delta(idleStart.cpuTicks, idleEnd.cpuTicks, name) * TICK_MS,
        delta(loadStart.cpuTicks, loadEnd.cpuTicks, name) * TICK_MS,
      ),
    );
  const sorted = Object.fromEntries(Object.entries(commandsByName).sort(([, a], [, b]) => b - a));
  return {
    results,
    inputs,
    loadMs,
    commandsByName: sorted,
    commands: round(Object.values(commandsByName).reduce((sum, value) => sum + value, 0)),
    roundTrips: round(net(idleEnd.reads - idleStart.reads, loadEnd.reads - loadStart.reads)),
    cpuMsByProcess,
    cpuMs: round(Object.values(cpuMsByProcess).reduce((sum, value) => sum + value, 0)),
  };
}

/** Polls (INFO only, which is not counted) until three windows in a row see no more commands than idle would. */
async function untilQuiet(redis: Redis, idlePerMs: number): Promise<void> {
  const windowMs = 500;
  let quiet = 0;
  let last = await commandCalls(redis);
  while (quiet < 3) {
    await new Promise((resolve) => setTimeout(resolve, windowMs));
    const now = await commandCalls(redis);
    const spent = [...now.entries()].reduce(
      (sum, [name, calls]) => (name === "info" ? sum : sum + calls - (last.get(name) ?? 0)),
      0,
    );
    quiet = spent <= idlePerMs * windowMs * 1.5 + 5 ? quiet + 1 : 0;
    last = now;
  }
}

async function commandCalls(redis: Redis): Promise<Map<string, number>> {
  const calls = new Map<string, number>();
  for (const match of (await redis.info("commandstats")).matchAll(/^cmdstat_([^:]+):calls=(\d+)/gm))
    calls.set(match[1] ?? "", Number(match[2]));
  return calls;
}

async function sample(redis: Redis, stack: E2EStack, server: RedisServerProcess): Promise<Sample> {
  const calls = await commandCalls(redis);
  const stats = await redis.info("stats");
  // Every INFO of this probe was one read of its own.
  const reads = Number(/^total_reads_processed:(\d+)/m.exec(stats)?.[1] ?? 0) - (calls.get("info") ?? 0);
  calls.delete("info");
  const commands = [...calls.values()].reduce((sum, value) => sum + value, 0);
  const cpuTicks = new Map<string, number>();
  const tree = processTree();
  for (const name of SERVICE_NAMES) cpuTicks.set(name, treeTicks(tree, stack.process(name).pid));
  cpuTicks.set("redis-server", treeTicks(tree, server.pid));
  return { at: Date.now(), calls, commands, reads, cpuTicks };
}

/**
 * Counts, through MONITOR, the commands each service process sent (its connections found by their local port with
 * `ss -tnp`); commands run inside scripts (source `lua`) and this probe's own are left out. A plain socket reads the
 * MONITOR lines: an ioredis client in monitoring mode can only be disconnected, and the lines still buffered then
 * reach its command queue as replies to nothing ("Command queue state error").
 */
class ClientCommandCounter {
  private readonly byProcess = new Map<string, number>();
  private readonly byProcessAndCommand = new Map<string, number>();
  private readonly allByProcess = new Map<string, number>();
  private readonly byScript = new Map<string, number>();
  /** The script whose commands the `lua` lines that follow are (MONITOR prints a script before what it runs). */
  private runningScript: { owner: string; name: string } | undefined;
  private pending = "";

  private readonly scripts = scriptNamesBySha();

  private constructor(
    private readonly socket: Socket,
    private readonly owners: Map<string, string>,
  ) {
    socket.setEncoding("utf8");
    socket.on("data", (chunk: string) => this.read(chunk));
  }

  static async start(stack: E2EStack, server: RedisServerProcess): Promise<ClientCommandCounter> {
    const owners = connectionOwners(stack, server.port);
    const socket = connect(server.port, "127.0.0.1");
    await once(socket, "connect");
    const counter = new ClientCommandCounter(socket, owners);
    socket.write("MONITOR\r\n");
    return counter;
  }

  /** `+<time> [<db> <ip>:<port>] "<COMMAND>" …` per line (`+OK` first, `lua` as the source of script commands). */
  private read(chunk: string): void {
    const lines = (this.pending + chunk).split("\r\n");
    this.pending = lines.pop() ?? "";
    for (const line of lines) {
      if (/^\+\S+ \[\d+ lua\]/.test(line)) {
        if (this.runningScript === undefined) continue;
        count(this.allByProcess, this.runningScript.owner);
        count(this.byScript, `${this.runningScript.owner} ${this.runningScript.name}`);
        continue;
      }
      const match = /^\+\S+ \[\d+ \S+?:(\d+)\] "([^"]*)"(?: "([^"]*)")?/.exec(line);
      const owner = match?.[1] === undefined ? undefined : this.owners.get(match[1]);
      const command = match?.[2]?.toLowerCase();
      this.runningScript = undefined;
      if (owner === undefined || command === undefined || command === "info") continue;
      count(this.byProcess, owner);
      count(this.allByProcess, owner);
      const script = command === "evalsha" ? (this.scripts.get(match?.[3] ?? "") ?? "?") : undefined;
      if (script !== undefined) this.runningScript = { owner, name: script };
      count(this.byProcessAndCommand, `${owner} ${command}${script === undefined ? "" : ` ${script}`}`);
    }
  }

  stop(): {
    byProcess: Map<string, number>;
    byProcessAndCommand: Map<string, number>;
    allByProcess: Map<string, number>;
    byScript: Map<string, number>;
  } {
    this.socket.destroy();
    return {
      byProcess: this.byProcess,
      byProcessAndCommand: this.byProcessAndCommand,
      allByProcess: this.allByProcess,
      byScript: this.byScript,
    };
  }
}

/** The project's Lua scripts and BullMQ's by SHA-1, so an EVALSHA is counted under the script's name. */
function scriptNamesBySha(): Map<string, string> {
  const names = new Map<string, string>();
  const bullScripts = resolve(projectRoot, "node_modules/bullmq/dist/esm/scripts");
  for (const file of readdirSync(bullScripts))
    if (file.endsWith(".js")) {
      const content = /^const content = `([\s\S]*?)`;\n/m.exec(
        readFileSync(resolve(bullScripts, file), "utf8"),
      )?.[1];
      if (content !== undefined)
        names.set(createHash("sha1").update(content).digest("hex"), `bullmq:${file.replace(/\.js$/, "")}`);
    }
  for (const root of ["libs", "services"])
    for (const file of readdirSync(resolve(projectRoot, root), { recursive: true, encoding: "utf8" }))
      if (/(^|\/)lua\/[a-z][a-z0-9-]*-\d+\.lua$/.test(file)) {
        const script = LuaScript.fromFile(resolve(projectRoot, root, file), z.unknown());
        names.set(script.sha, script.name);
      }
  return names;
}

function count(counts: Map<string, number>, key: string): void {
  counts.set(key, (counts.get(key) ?? 0) + 1);
}

/** Local port of each service connection to Redis → the service (its process or a child of it). */
function connectionOwners(stack: E2EStack, redisPort: number): Map<string, string> {
  const tree = processTree();
  const serviceOf = new Map<number, string>();
  for (const name of SERVICE_NAMES) {
    const root = stack.process(name).pid;
    if (root !== undefined) for (const pid of descendants(tree, root)) serviceOf.set(pid, name);
  }
  const owners = new Map<string, string>();
  for (const line of execFileSync("ss", ["-tnpH"]).toString().split("\n")) {
    const match = /127\.0\.0\.1:(\d+)\s+127\.0\.0\.1:(\d+)\s.*pid=(\d+)/.exec(line);
    if (!match || Number(match[2]) !== redisPort) continue;
    const service = serviceOf.get(Number(match[3]));
    if (service !== undefined) owners.set(match[1] ?? "", service);
  }
  return owners;
}

function descendants(tree: Map<number, ProcStat>, root: number): number[] {
  const found = [root];
  for (const [pid, stat] of tree) if (stat.ppid === root) found.push(...descendants(tree, pid));
  return found;
}

interface ProcStat {
  ppid: number;
  ticks: number;
}

function processTree(): Map<number, ProcStat> {
  const tree = new Map<number, ProcStat>();
  for (const entry of readdirSync("/proc")) {
    if (!/^\d+$/.test(entry)) continue;
    try {
      const stat = readFileSync(`/proc/${entry}/stat`, "utf8");
      // Fields after the parenthesised command name: state ppid … utime(14) stime(15).
      const fields = stat.slice(stat.lastIndexOf(")") + 2).split(" ");
      tree.set(Number(entry), { ppid: Number(fields[1]), ticks: Number(fields[11]) + Number(fields[12]) });
    } catch {
      // the process ended while we looked
    }
  }
  return tree;
}

function treeTicks(tree: Map<number, ProcStat>, root: number | undefined): number {
  if (root === undefined) return 0;
  return descendants(tree, root).reduce((sum, pid) => sum + (tree.get(pid)?.ticks ?? 0), 0);
}

function round(value: number): number {
  return Math.round(value * 10) / 10;
}
