import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterAll, beforeAll } from "vitest";
import type { AgentConfig } from "../../libs/contract/engine.js";
import { TsProcess } from "../helpers/child-process.js";
import { createTestRedis, type TestRedis } from "../helpers/test-redis.js";
import { writeAgentsFile } from "./agents-file.js";
import { dispatcher, type Dispatcher } from "./engine-records.js";

export interface RunnerProcess {
  process: TsProcess;
  /** The runner's HTTP face (/healthz, /readyz, /metrics) once it listens. */
  url(): string;
}

/** services/engine-runner/main.ts as its own OS process, configured only through its environment. */
export async function startRunner(env: Record<string, string>): Promise<RunnerProcess> {
  const runner = new TsProcess("services/engine-runner/main.ts", {
    PORT: "0",
    LOG_LEVEL: "info",
    STREAM_BLOCK_MS: "200",
    STREAM_RETRY_DELAY_MS: "100",
    ENGINE_RESTART_MIN_MS: "100",
    ENGINE_RESTART_MAX_MS: "1000",
    TRANSCRIPT_POLL_MS: "50",
    ...env,
  });
  await runner.waitForOutput("services started", 90_000);
  return { process: runner, url: () => urlOf(runner) };
}

/** A runner process over its agents, in a Redis namespace and work directory of its own, and a dispatcher to it. */
export interface RunnerSuite {
  t: TestRedis;
  workDir: string;
  runner: RunnerProcess;
  send: Dispatcher;
}

/**
 * The runner of a describe block: `agentsOf` builds the agents in the block's work directory, the runner starts
 * before the block's first test and is stopped, with its Redis data and files, after its last.
 */
export function useRunnerSuite(
  label: string,
  machineId: string,
  agentsOf: (workDir: string) => AgentConfig[],
  env: Record<string, string> = {},
): RunnerSuite {
  const suite = {} as RunnerSuite;
  beforeAll(async () => {
    const t = createTestRedis(label);
    const workDir = mkdtempSync(join(tmpdir(), `engine-${label}-`));
    const agentsFile = writeAgentsFile(workDir, agentsOf(workDir));
    const runner = await startRunner({
      REDIS_URL: t.url,
      KEY_PREFIX: t.keys.prefix,
      STREAM_PARTITIONS: String(t.keys.partitions),
      AGENTS_FILE: agentsFile,
      ...env,
    });
    Object.assign(suite, { t, workDir, runner, send: dispatcher(t.redis, t.keys, machineId) });
  });
  afterAll(async () => {
    await suite.runner?.process.kill("SIGTERM");
    await suite.t.cleanup();
    rmSync(suite.workDir, { recursive: true, force: true });
  });
  return suite;
}

/** The child's output accumulates across restarts, so a restart is ready when one more start is reported. */
export async function restartRunner(runner: RunnerProcess): Promise<void> {
  const starts = countStarts(runner.process);
  await runner.process.restart();
  const deadline = Date.now() + 90_000;
  while (countStarts(runner.process) <= starts) {
    if (Date.now() > deadline) throw new Error(`runner did not start again\n${runner.process.log}`);
    await new Promise((resolve) => setTimeout(resolve, 50));
  }
}

function countStarts(runner: TsProcess): number {
  return (runner.log.match(/services started/g) ?? []).length;
}

function urlOf(runner: TsProcess): string {
  const addresses = [...runner.log.matchAll(/"address":"(http:\/\/[^"]+)"/g)];
  const address = addresses.at(-1)?.[1];
  if (!address) throw new Error(`runner has not reported its address\n${runner.log}`);
  return address;
}
