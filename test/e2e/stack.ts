import { mkdtempSync, readdirSync, readFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import type { Redis } from "ioredis";
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
import { createTestRedis, waitFor, type TestRedis } from "../helpers/test-redis.js";
import { TestLamp, type TestLampOptions } from "./test-lamp.js";

export const SERVICE_NAMES = [
  "engine-runner",
  "evidence-extractor",
  "result-producer",
  "harness-gateway",
  "device-gateway",
  "router",
  "run-resolver",
  "tts-dispatcher",
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
}

/**
 * The whole system as in production: each of the eight services its own OS process on its own port, sharing one
 * Redis under a fresh key prefix, engine-sim as the engine behind the engine-runner, and Lamps over the real
 * device-gateway WebSocket.
 */
export class E2EStack {
  private readonly processes = new Map<ServiceName, TsProcess>();
  private readonly lamps: TestLamp[] = [];

  private constructor(
    readonly t: TestRedis,
    readonly workDir: string,
    readonly agents: Map<string, EngineSimAgent>,
    private readonly ports: Map<ServiceName, number>,
    private readonly env: Record<string, string>,
    private readonly startTimeoutMs: number,
  ) {}

  static async start(options: StackOptions): Promise<E2EStack> {
    const t = createTestRedis(options.label, options.redisUrl);
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
    const ports = new Map<ServiceName, number>();
    for (const name of SERVICE_NAMES) ports.set(name, await freePort());
    const env: Record<string, string> = {
      REDIS_URL: t.url,
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
    const stack = new E2EStack(t, workDir, agents, ports, env, options.startTimeoutMs ?? 60_000);
    try {
      await Promise.all(SERVICE_NAMES.map((name) => stack.launch(name)));
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

  get redis(): Redis {
    return this.t.redis;
  }

  url(name: ServiceName): string {
    return `http://127.0.0.1:${this.ports.get(name)}`;
  }

  get lampUrl(): string {
    return `ws://127.0.0.1:${this.ports.get("device-gateway")}/v1/lamp/ws`;
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

  /** A Lamp for `deviceId`, connected over the real WebSocket. */
  async lamp(deviceId: string, options: Partial<TestLampOptions> = {}): Promise<TestLamp> {
    const lamp = await TestLamp.connect({ url: this.lampUrl, token: await this.token(deviceId), ...options });
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

  process(name: ServiceName): TsProcess {
    const child = this.processes.get(name);
    if (!child) throw new Error(`${name} is not running`);
    return child;
  }

  async kill(name: ServiceName, signal: NodeJS.Signals = "SIGKILL"): Promise<void> {
    await this.process(name).kill(signal);
  }

  /** Starts a killed (or running: it is SIGKILLed first) service again with the same configuration. */
  async restart(name: ServiceName): Promise<void> {
    await this.process(name).restart();
    await this.waitForHealth(name);
  }

  async waitUntilReady(timeoutMs = this.startTimeoutMs): Promise<void> {
    await Promise.all(SERVICE_NAMES.map((name) => this.waitForReady(name, timeoutMs)));
  }

  async stop(): Promise<void> {
    for (const lamp of this.lamps.splice(0)) lamp.close();
    await Promise.all([...this.processes.values()].map((child) => child.kill("SIGKILL")));
    await this.t.cleanup();
  }

  private async launch(name: ServiceName): Promise<void> {
    const child = new TsProcess(`services/${name}/main.ts`, {
      ...this.env,
      PORT: String(this.ports.get(name)),
      CONSUMER_NAME: `${name}-e2e`,
    });
    this.processes.set(name, child);
    await this.waitForHealth(name);
  }

  private async waitForHealth(name: ServiceName, timeoutMs = this.startTimeoutMs): Promise<void> {
    await this.poll(name, "/healthz", timeoutMs);
  }

  private async waitForReady(name: ServiceName, timeoutMs: number): Promise<void> {
    await this.poll(name, "/readyz", timeoutMs);
  }

  private async poll(name: ServiceName, path: string, timeoutMs: number): Promise<void> {
    const ok = await waitFor(
      async () => {
        try {
          return (await fetch(`${this.url(name)}${path}`)).status === 200;
        } catch {
          return false;
        }
      },
      (healthy) => healthy,
      { timeoutMs, intervalMs: 100 },
    );
    if (!ok)
      throw new Error(`${name} not ${path} within ${timeoutMs} ms\n${this.process(name).log.slice(-3000)}`);
  }
}
