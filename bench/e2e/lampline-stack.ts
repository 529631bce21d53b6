import { readdirSync, readFileSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import type { AgentConfig } from "../../libs/contract/engine.js";
import { freePort } from "../../libs/redis/redis-server-process.js";
import { SERVICE_NAMES } from "../../test/e2e/stack.js";
import { projectRoot, TsProcess } from "../../test/helpers/child-process.js";
import { waitFor } from "../../test/helpers/test-redis.js";
import { writeGroupScenario } from "./bench-scenarios.js";

export type StackMode = "split" | "all-in-one";

export const BENCH_SECRET = "bench-secret-0123456789abcdef-0123";
const BENCH_HARNESS_SECRET = "bench-harness-secret-0123456789abcdef";
export const BENCH_MACHINE = "machine-bench";

/** The engines: agents answering one input per turn, and steered agents answering groups of two and three. */
export interface BenchAgents {
  single: string[];
  groupsOf2: string[];
  groupsOf3: string[];
}

export function benchAgents(singles: number, steered: number): BenchAgents {
  const ids = (kind: string, count: number) => Array.from({ length: count }, (_, n) => `${kind}-${n + 1}`);
  return {
    single: ids("bench-single", singles),
    groupsOf2: ids("bench-pair", Math.ceil(steered / 2)),
    groupsOf3: ids("bench-triple", Math.floor(steered / 2)),
  };
}

/** Every limit the bench would otherwise hit before the pipeline does: per-device and per-connection rates. */
const RAISED_LIMITS: Record<string, string> = {
  LAMP_RATE_LIMIT_BURST: "100000",
  LAMP_RATE_LIMIT_PER_SECOND: "100000",
  LAMP_MAX_PENDING_RUNS: "100000",
  RATE_LIMIT_BURST: "1000000",
  RATE_LIMIT_PER_SECOND: "1000000",
  MAX_IN_FLIGHT: "1000",
  RECEIPT_CAPACITY: "100000",
};

/**
 * lampline as deployed: the eight services each their own process (split), or all of them in one process
 * (all-in-one), on the bench's Redis, with engine-sim (no input log, no state file, no sleeps) behind the
 * engine-runner. Only public surfaces: env, ports, the agents file.
 */
export class LamplineStack {
  private constructor(
    readonly mode: StackMode,
    private readonly processes: Map<string, TsProcess>,
    private readonly ports: Map<string, number>,
    private readonly workDir: string,
  ) {}

  static async start(options: {
    mode: StackMode;
    redisUrl: string;
    keyPrefix: string;
    workDir: string;
    agents: BenchAgents;
    /** Extra environment for every process (e.g. STREAM_PARTITIONS). */
    env?: Record<string, string>;
    /** Split mode: more than one process of a service (`router: 2` adds `router#2`). */
    replicas?: Partial<Record<(typeof SERVICE_NAMES)[number], number>>;
  }): Promise<LamplineStack> {
    const agentsFile = join(options.workDir, "agents.json");
    writeAgentsFile(agentsFile, options.workDir, options.agents);
    const names: string[] = options.mode === "split" ? [...SERVICE_NAMES] : ["all-in-one"];
    for (const [service, count] of Object.entries(options.replicas ?? {}))
      for (let replica = 2; replica <= (count ?? 1); replica += 1) names.push(`${service}#${replica}`);
    const ports = new Map<string, number>();
    for (const name of names) ports.set(name, await freePort());
    const gatewayPort = ports.get(options.mode === "split" ? "harness-gateway" : "all-in-one");
    const env: Record<string, string> = {
      REDIS_URL: options.redisUrl,
      KEY_PREFIX: options.keyPrefix,
      HOST: "127.0.0.1",
      LOG_LEVEL: "warn",
      AUTH_JWT_SECRET: BENCH_SECRET,
      HARNESS_JWT_SECRET: BENCH_HARNESS_SECRET,
      AGENTS_FILE: agentsFile,
      MACHINE_ID: BENCH_MACHINE,
      HARNESS_MACHINE_ID: BENCH_MACHINE,
      HARNESS_URL: `ws://127.0.0.1:${gatewayPort}/v1/harness/ws`,
      GATEWAY_INSTANCE_ID: "device-gateway-bench",
      ...RAISED_LIMITS,
      ...options.env,
    };
    const processes = new Map<string, TsProcess>();
    const stack = new LamplineStack(options.mode, processes, ports, options.workDir);
    try {
      for (const name of names) {
        const service = name.split("#")[0] as string;
        const entry =
          options.mode === "split" ? `services/${service}/main.ts` : "services/all-in-one/main.ts";
        processes.set(
          name,
          new TsProcess(entry, { ...env, PORT: String(ports.get(name)), CONSUMER_NAME: `${name}-bench` }),
        );
      }
      await Promise.all(names.map((name) => stack.waitFor(name, "/readyz")));
    } catch (error) {
      await stack.stop();
      throw error;
    }
    return stack;
  }

  get lampUrl(): string {
    const port = this.ports.get(this.mode === "split" ? "device-gateway" : "all-in-one");
    return `ws://127.0.0.1:${port}/v1/lamp/ws`;
  }

  /** A service process's HTTP base URL (`router#2` for a replica): its /metrics, /readyz. */
  httpUrl(name: string): string {
    const port = this.ports.get(name);
    if (port === undefined) throw new RangeError(`no process ${name} in this stack`);
    return `http://127.0.0.1:${port}`;
  }

  /** The service processes by name, and the engine-sim processes they started (counted apart: the load). */
  pids(): { services: Map<string, number>; engines: number[] } {
    const services = new Map<string, number>();
    for (const [name, child] of this.processes) if (child.pid !== undefined) services.set(name, child.pid);
    return { services, engines: engineSimPids(this.workDir) };
  }

  async stop(): Promise<void> {
    await Promise.all([...this.processes.values()].map((child) => child.kill("SIGKILL")));
  }

  private async waitFor(name: string, path: string, timeoutMs = 90_000): Promise<void> {
    const url = `http://127.0.0.1:${this.ports.get(name)}${path}`;
    const child = this.processes.get(name);
    let exited = false;
    void child?.exit().then(() => (exited = true));
    const ok = await waitFor(
      async () => {
        if (exited) return true;
        try {
          return (await fetch(url)).status === 200;
        } catch {
          return false;
        }
      },
      (ready) => ready,
      { timeoutMs, intervalMs: 200 },
    );
    if (!ok || exited)
      throw new Error(`${name} not ${path} within ${timeoutMs} ms\n${child?.log.slice(-3000)}`);
  }
}

const ENGINE_SIM = join(projectRoot, "bin", "engine-sim.mjs");

function writeAgentsFile(path: string, workDir: string, agents: BenchAgents): void {
  const entry = (agentId: string, inputs: 1 | 2 | 3): AgentConfig => ({
    agentId,
    machineId: BENCH_MACHINE,
    engine: "claude-stream-json",
    command: [
      process.execPath,
      ENGINE_SIM,
      "--protocol",
      "claude-stream-json",
      "--scenario",
      writeGroupScenario(workDir, inputs),
    ],
  });
  const all = [
    ...agents.single.map((id) => entry(id, 1)),
    ...agents.groupsOf2.map((id) => entry(id, 2)),
    ...agents.groupsOf3.map((id) => entry(id, 3)),
  ];
  writeFileSync(path, JSON.stringify(all, null, 2));
}

/** Every live engine-sim process playing a scenario of this bench's work dir. */
function engineSimPids(workDir: string): number[] {
  return readdirSync("/proc")
    .filter((entry) => /^\d+$/.test(entry))
    .filter((pid) => {
      try {
        const argv = readFileSync(`/proc/${pid}/cmdline`, "utf8").split("\0");
        return argv.includes(ENGINE_SIM) && argv.some((arg) => arg.startsWith(workDir));
      } catch {
        return false;
      }
    })
    .map(Number);
}
