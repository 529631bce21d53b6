import { mkdtempSync, readdirSync, readFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import type { RedisClient } from "../../libs/redis/redis-client.js";
import { signToken } from "../../libs/auth/tokens.js";
import { freePort } from "../../libs/redis/redis-server-process.js";
import type { Keyspace } from "../../libs/redis/keyspace.js";
import {
  engineSimAgent,
  loggedInputs,
  writeAgentsFile,
  type EngineSimAgent,
  type EngineSimAgentOptions,
} from "../engine-runner/agents-file.js";
import { TsProcess } from "../helpers/child-process.js";
import { createTestCluster, createTestRedis, waitFor, type TestStore } from "../helpers/test-redis.js";
import type { ClusterNode } from "../../libs/redis/connections.js";
import { TestLamp, type TestLampOptions } from "./test-lamp.js";
import { inject } from "vitest";

/** Where a suite runs every stack it starts (the cluster suite: a Redis Cluster, replicas, partitions). */
export type StackProfile = Pick<StackOptions, "redisClusterNodes" | "partitions" | "replicas">;

declare module "vitest" {
  export interface ProvidedContext {
    /** Set by a global setup that runs suites (e.g. the joint acceptance tests) on another deployment shape. */
    e2eStackProfile?: StackProfile;
  }
}

export const SERVICE_NAMES = [
  "engine-runner",
  "evidence-extractor",
  "result-producer",
  "harness-gateway",
  "device-gateway",
  "router",
  "run-resolver",
  "tts-dispatcher",
  "console",
] as const;
export type ServiceName = (typeof SERVICE_NAMES)[number];

/** Signs OS tokens (aud `os`): Lamps and operators of the OS API. */
export const E2E_SECRET = "e2e-secret-0123456789abcdef-0123";
/** Signs Harness tokens (aud `harness`): the router's per-device peer tokens and Harness operators. */
export const E2E_HARNESS_SECRET = "e2e-harness-secret-0123456789abcdef";
export const MACHINE = "machine-e2e";

export interface StackOptions {
  label: string;
  /** engine-sim agents (scenario or corpus replay) hosted by the engine-runner. */
  agents: Array<Omit<EngineSimAgentOptions, "workDir" | "machineId">>;
  /** Other engines the test builds in the stack's work dir (machine MACHINE), e.g. the real CLIs in a sandbox. */
  engines?: Array<(workDir: string) => EngineSimAgent>;
  /** Extra environment for every service, e.g. a shorter PLAYBACK_ACK_TIMEOUT_MS. */
  env?: Record<string, string>;
  /** Redis to use (a private server for Redis-restart tests); the shared test Redis by default. */
  redisUrl?: string;
  /** How long a service may take to become healthy/ready at start and after a restart (default 60 s). */
  startTimeoutMs?: number;
  /** A Redis Cluster instead (REDIS_CLUSTER_NODES for every service); `redisUrl` is then not used. */
  redisClusterNodes?: readonly ClusterNode[];
  /** STREAM_PARTITIONS of every service and of the test's keyspace (default 1). */
  partitions?: number;
  /** How many processes of each service run (default 1 each); replica `i` is `process(name, i)`. */
  replicas?: Partial<Record<ServiceName, number>>;
}

/**
 * The whole system as in production: each of the nine services its own OS process on its own port, sharing one
 * Redis under a fresh key prefix, engine-sim as the engine behind the engine-runner, and Lamps over the real
 * device-gateway WebSocket.
 */
export class E2EStack {
  private readonly processes = new Map<string, TsProcess>();
  private readonly lamps: TestLamp[] = [];

  private constructor(
    readonly t: TestStore,
    readonly workDir: string,
    readonly agents: Map<string, EngineSimAgent>,
    private readonly ports: Map<string, number>,
    private readonly env: Record<string, string>,
    private readonly startTimeoutMs: number,
    private readonly replicas: Partial<Record<ServiceName, number>>,
  ) {}

  static async start(requested: StackOptions): Promise<E2EStack> {
    // Outside vitest (npm run chaos) there is no profile to inject.
    const options = { ...(process.env.VITEST ? inject("e2eStackProfile") : {}), ...requested };
    const partitions = options.partitions ?? 1;
    const t = options.redisClusterNodes
      ? createTestCluster(options.label, options.redisClusterNodes, partitions)
      : createTestRedis(options.label, options.redisUrl, partitions);
    const replicas = options.replicas ?? {};
    const workDir = mkdtempSync(join(tmpdir(), `e2e-${options.label}-`));
    const agents = new Map<string, EngineSimAgent>();
    for (const agent of options.agents) {
      agents.set(agent.agentId, engineSimAgent({ ...agent, machineId: MACHINE, workDir }));
    }
    for (const build of options.engines ?? []) {
      const engine = build(workDir);
      agents.set(engine.config.agentId, engine);
    }
    const agentsFile = writeAgentsFile(
      workDir,
      [...agents.values()].map((agent) => agent.config),
    );
    const ports = new Map<string, number>();
    for (const name of SERVICE_NAMES)
      for (let replica = 0; replica < (replicas[name] ?? 1); replica += 1)
        ports.set(replicaId(name, replica), await freePort());
    const env: Record<string, string> = {
      REDIS_URL: t.url,
      ...(t.clusterNodes
        ? { REDIS_CLUSTER_NODES: t.clusterNodes.map((n) => `${n.host}:${n.port}`).join(",") }
        : {}),
      STREAM_PARTITIONS: String(partitions),
      KEY_PREFIX: t.keys.prefix,
      HOST: "127.0.0.1",
      LOG_LEVEL: process.env.E2E_LOG_LEVEL ?? "warn",
      AUTH_JWT_SECRET: E2E_SECRET,
      HARNESS_JWT_SECRET: E2E_HARNESS_SECRET,
      AGENTS_FILE: agentsFile,
      MACHINE_ID: MACHINE,
      HARNESS_MACHINE_ID: MACHINE,
      HARNESS_URL: `ws://127.0.0.1:${ports.get("harness-gateway")}/v1/harness/ws`,
      GATEWAY_INSTANCE_ID: "device-gateway-e2e",
      STREAM_BLOCK_MS: "200",
      STREAM_RETRY_DELAY_MS: "100",
      STREAM_CLAIM_MIN_IDLE_MS: "3000",
      ROUTER_LEASE_TTL_MS: "3000",
      HARNESS_RECONNECT_MS: "200",
      HARNESS_REQUEST_TIMEOUT_MS: "3000",
      PLAYBACK_ACK_TIMEOUT_MS: "4000",
      PLAYBACK_RETRY_DELAY_MS: "200",
      ...options.env,
    };
    const stack = new E2EStack(t, workDir, agents, ports, env, options.startTimeoutMs ?? 60_000, replicas);
    try {
      await Promise.all(stack.instances().map(([name, replica]) => stack.launch(name, replica)));
      await stack.waitUntilReady();
    } catch (error) {
      // A stack that never came up has nobody to stop it later.
      await stack.stop();
      throw error;
    }
    return stack;
  }

  get keys(): Keyspace {
    return this.t.keys;
  }

  get redis(): RedisClient {
    return this.t.redis;
  }

  /** The first replica's address (or that of replica `replica`). */
  url(name: ServiceName, replica = 0): string {
    return `http://127.0.0.1:${this.ports.get(replicaId(name, replica))}`;
  }

  get lampUrl(): string {
    return this.lampUrlOf(0);
  }

  /** The Lamp WebSocket of one device-gateway replica. */
  lampUrlOf(replica: number): string {
    return `ws://127.0.0.1:${this.ports.get(replicaId("device-gateway", replica))}/v1/lamp/ws`;
  }

  /** An OS token (aud `os`): a Lamp, or an operator of the OS API. */
  token(deviceId: string, role: "device" | "operator" = "device"): Promise<string> {
    return signToken(E2E_SECRET, { audience: "os", sub: deviceId, role, expiresInSeconds: 3600 });
  }

  /** A Harness token (aud `harness`): a Harness operator (the router mints its own peer tokens). */
  harnessOperatorToken(): Promise<string> {
    return signToken(E2E_HARNESS_SECRET, {
      audience: "harness",
      sub: "ops",
      role: "operator",
      expiresInSeconds: 3600,
    });
  }

  /** A Lamp for `deviceId`, connected over the real WebSocket; with several device-gateways, to each in turn. */
  async lamp(deviceId: string, options: Partial<TestLampOptions> = {}): Promise<TestLamp> {
    const url = this.lampUrlOf(this.lamps.length % (this.replicas["device-gateway"] ?? 1));
    const lamp = await TestLamp.connect({ url, token: await this.token(deviceId), ...options });
    this.lamps.push(lamp);
    return lamp;
  }

  /** GET on the OS query API as the device (or an operator). */
  async api<T = unknown>(deviceId: string, path: string): Promise<{ status: number; body: T }> {
    const response = await fetch(`${this.url("device-gateway")}${path}`, {
      headers: { authorization: `Bearer ${await this.token(deviceId)}` },
    });
    return { status: response.status, body: (await response.json()) as T };
  }

  /** Every stdin line the agent's engine received, across all of its processes. */
  engineInputs(agentId: string): Record<string, unknown>[] {
    const agent = this.agents.get(agentId);
    if (!agent) throw new Error(`unknown agent ${agentId}`);
    return loggedInputs(agent);
  }

  /** SIGKILLs the agent's running engine process(es) (found by the input log only that agent's command names). */
  killEngine(agentId: string): number {
    const agent = this.agents.get(agentId);
    if (!agent) throw new Error(`unknown agent ${agentId}`);
    const pids = readdirSync("/proc")
      .filter((entry) => /^\d+$/.test(entry))
      .filter((pid) => {
        try {
          return readFileSync(`/proc/${pid}/cmdline`, "utf8").split("\0").includes(agent.inputLog);
        } catch {
          return false; // the process ended while we looked
        }
      });
    for (const pid of pids) process.kill(Number(pid), "SIGKILL");
    return pids.length;
  }

  process(name: ServiceName, replica = 0): TsProcess {
    const child = this.processes.get(replicaId(name, replica));
    if (!child) throw new Error(`${replicaId(name, replica)} is not running`);
    return child;
  }

  async kill(name: ServiceName, signal: NodeJS.Signals = "SIGKILL", replica = 0): Promise<void> {
    await this.process(name, replica).kill(signal);
  }

  /** Starts a killed (or running: it is SIGKILLed first) service replica again with the same configuration. */
  async restart(name: ServiceName, replica = 0): Promise<void> {
    await this.process(name, replica).restart();
    await this.waitForHealth(name, this.startTimeoutMs, replica);
  }

  async waitUntilReady(timeoutMs = this.startTimeoutMs): Promise<void> {
    await Promise.all(this.instances().map(([name, replica]) => this.waitForReady(name, timeoutMs, replica)));
  }

  /** The last `chars` of every running process's output that mentions `needle` (what a failed wait shows). */
  logsMentioning(needle: string, chars = 1500): string {
    return [...this.processes.entries()]
      .map(([id, child]) => {
        const lines = child.log.split("\n").filter((line) => line.includes(needle));
        return lines.length === 0 ? "" : `--- ${id}\n${lines.join("\n").slice(-chars)}`;
      })
      .filter((tail) => tail !== "")
      .join("\n");
  }

  /** Every process of the stack: each service with each of its replicas. */
  instances(): [ServiceName, number][] {
    return SERVICE_NAMES.flatMap((name) =>
      Array.from({ length: this.replicas[name] ?? 1 }, (_, replica): [ServiceName, number] => [
        name,
        replica,
      ]),
    );
  }

  async stop(): Promise<void> {
    for (const lamp of this.lamps.splice(0)) lamp.close();
    await Promise.all([...this.processes.values()].map((child) => child.kill("SIGKILL")));
    await this.t.cleanup();
  }

  /** Replica 0 keeps the single-replica names; others get their own consumer name and gateway instance id. */
  private async launch(name: ServiceName, replica = 0): Promise<void> {
    const suffix = replica === 0 ? "" : `-${replica}`;
    const child = new TsProcess(`services/${name}/main.ts`, {
      ...this.env,
      PORT: String(this.ports.get(replicaId(name, replica))),
      CONSUMER_NAME: `${name}-e2e${suffix}`,
      ...(replica === 0 ? {} : { GATEWAY_INSTANCE_ID: `${this.env.GATEWAY_INSTANCE_ID}${suffix}` }),
    });
    this.processes.set(replicaId(name, replica), child);
    await this.waitForHealth(name, this.startTimeoutMs, replica);
  }

  private async waitForHealth(
    name: ServiceName,
    timeoutMs = this.startTimeoutMs,
    replica = 0,
  ): Promise<void> {
    await this.poll(name, "/healthz", timeoutMs, replica);
  }

  private async waitForReady(name: ServiceName, timeoutMs: number, replica = 0): Promise<void> {
    await this.poll(name, "/readyz", timeoutMs, replica);
  }

  private async poll(name: ServiceName, path: string, timeoutMs: number, replica = 0): Promise<void> {
    const ok = await waitFor(
      async () => {
        try {
          return (await fetch(`${this.url(name, replica)}${path}`)).status === 200;
        } catch {
          return false;
        }
      },
      (healthy) => healthy,
      { timeoutMs, intervalMs: 100 },
    );
    if (!ok)
      throw new Error(
        `${replicaId(name, replica)} not ${path} within ${timeoutMs} ms\n${this.process(name, replica).log.slice(-3000)}`,
      );
  }
}

/** A process's name in the stack: the service for replica 0, `<service>#<replica>` for the others. */
function replicaId(name: ServiceName, replica: number): string {
  return replica === 0 ? name : `${name}#${replica}`;
}
