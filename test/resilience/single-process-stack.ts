import { mkdtempSync, readFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { signToken } from "../../libs/auth/tokens.js";
import { freePort } from "../../libs/redis/redis-server-process.js";
import { TestLamp } from "../e2e/test-lamp.js";
import { engineSimAgent, writeAgentsFile } from "../engine-runner/agents-file.js";
import { TsProcess } from "../helpers/child-process.js";
import { sampleValue } from "../helpers/metrics-text.js";
import { createTestRedis, waitFor, type TestRedis } from "../helpers/test-redis.js";

const OS_SECRET = "single-process-os-secret-0123456789abcdef";
const HARNESS_SECRET = "single-process-harness-secret-0123456789ab";
export const MACHINE = "machine-single";
export const AGENT = "claude-1";

/**
 * `npm start` as a real child process (every service in one node process, so a signal to it pauses the Lamp's gateway,
 * the router and the Harness gateway at once) on the test Redis, with an engine-sim Claude agent answering each input.
 */
export class SingleProcessStack {
  private readonly lamps: TestLamp[] = [];

  private constructor(
    readonly child: TsProcess,
    readonly port: number,
    private readonly t: TestRedis,
  ) {}

  static async start(label: string, env: Record<string, string> = {}): Promise<SingleProcessStack> {
    const t = createTestRedis(label);
    const workDir = mkdtempSync(join(tmpdir(), `single-${label}-`));
    const agent = engineSimAgent({
      agentId: AGENT,
      machineId: MACHINE,
      protocol: "claude-stream-json",
      scenario: "claude-answer-each-input",
      workDir,
    });
    const port = await freePort();
    const child = new TsProcess("services/all-in-one/main.ts", {
      REDIS_URL: t.url,
      KEY_PREFIX: t.keys.prefix,
      PORT: String(port),
      HOST: "127.0.0.1",
      LOG_LEVEL: "info",
      AUTH_JWT_SECRET: OS_SECRET,
      HARNESS_JWT_SECRET: HARNESS_SECRET,
      AGENTS_FILE: writeAgentsFile(workDir, [agent.config]),
      MACHINE_ID: MACHINE,
      HARNESS_MACHINE_ID: MACHINE,
      STREAM_BLOCK_MS: "200",
      ...env,
    });
    const stack = new SingleProcessStack(child, port, t);
    const ready = await waitFor(
      () =>
        stack.get("/readyz").then(
          (response) => response.status === 200,
          () => false,
        ),
      (ok) => ok,
      { timeoutMs: 90_000, intervalMs: 200 },
    );
    if (!ready) {
      await stack.stop();
      throw new Error(`the all-in-one did not become ready\n${child.log.slice(-3000)}`);
    }
    return stack;
  }

  get pid(): number {
    const pid = this.child.pid;
    if (pid === undefined) throw new Error("the all-in-one has no pid");
    return pid;
  }

  get lampUrl(): string {
    return `ws://127.0.0.1:${this.port}/v1/lamp/ws`;
  }

  token(deviceId: string): Promise<string> {
    return signToken(OS_SECRET, { audience: "os", sub: deviceId, role: "device", expiresInSeconds: 3600 });
  }

  async lamp(deviceId: string, options: { onClose?: () => void } = {}): Promise<TestLamp> {
    const lamp = await TestLamp.connect({ url: this.lampUrl, token: await this.token(deviceId), ...options });
    this.lamps.push(lamp);
    return lamp;
  }

  /** A sample of the process's /metrics (undefined when the series is absent). */
  async metric(name: string, labels?: Record<string, string>): Promise<number | undefined> {
    return sampleValue(await (await this.get("/metrics")).text(), name, labels);
  }

  /** The resident set size of the all-in-one node process, in bytes (/proc/<pid>/status VmRSS). */
  rssBytes(): number {
    const line = /^VmRSS:\s+(\d+) kB$/m.exec(readFileSync(`/proc/${this.pid}/status`, "utf8"));
    if (!line?.[1]) throw new Error(`no VmRSS for ${this.pid}`);
    return Number(line[1]) * 1024;
  }

  /** How many log lines of the process carry `message`. */
  logCount(message: string): number {
    return this.child.log.split("\n").filter((line) => line.includes(message)).length;
  }

  async stop(): Promise<void> {
    for (const lamp of this.lamps.splice(0)) lamp.close();
    await this.child.kill("SIGKILL");
    await this.t.cleanup();
  }

  private get(path: string): Promise<Response> {
    return fetch(`http://127.0.0.1:${this.port}${path}`);
  }
}
