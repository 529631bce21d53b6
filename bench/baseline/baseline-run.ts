import type { ChildProcess } from "node:child_process";
import { randomUUID } from "node:crypto";
import type { Redis } from "ioredis";
import { spawnOwned, type OwnedProcess } from "../../libs/processes/owned-processes.js";
import { sleep } from "../../libs/timing/sleep.js";
import { projectRoot } from "../../test/helpers/child-process.js";
import type { LatencySummary } from "../e2e/latency.js";
import { measured, type WindowCost } from "../e2e/measured-window.js";
import { searchMax } from "../e2e/max-search.js";
import {
  BASELINE_STAGES,
  BASELINE_STREAM_MAXLEN,
  preciseNow,
  streamKey,
  workerReportSchema,
  type BaselineMessage,
  type WorkerCommand,
  type WorkerReport,
} from "./baseline-message.js";

export interface BaselineLoad {
  kind: "fixed" | "max-step";
  offeredPerSecond: number;
  seconds: number;
  sustainedPerSecond: number;
  messagesSent: number;
  /** Messages of the window the worker processed, by the end of the drain. */
  completed: number;
  latency: LatencySummary;
  cost: WindowCost;
}

const TICK_MS = 5;
const DRAIN_MS = 20_000;
const TEXT =
  "The build passed and the three failing tests are fixed; the deploy is waiting for your approval.";

/** One baseline process (a stage or the worker) with node IPC, ended with the bench. */
class BaselineProcess {
  readonly ready: Promise<void>;
  private readonly owned: OwnedProcess;

  constructor(entry: string, env: Record<string, string>) {
    this.owned = spawnOwned(process.execPath, ["--import", "tsx", entry], {
      cwd: projectRoot,
      env: { ...process.env, ...env },
      stdio: ["ignore", "pipe", "pipe", "ipc"],
      onOwnerExit: "SIGKILL",
    });
    let output = "";
    this.ready = new Promise((resolve, reject) => {
      const child = this.owned.child;
      const append = (chunk: Buffer) => {
        output = (output + chunk.toString()).slice(-4000);
        if (output.includes("ready\n")) resolve();
      };
      child.stdout?.on("data", append);
      child.stderr?.on("data", append);
      child.once("exit", (code) =>
        reject(new Error(`${entry} exited (${code}) before it was ready\n${output}`)),
      );
    });
  }

  get child(): ChildProcess {
    return this.owned.child;
  }

  stop(): void {
    this.owned.signalGroup("SIGKILL");
  }
}

/**
 * The bare baseline on the bench's Redis: five stream stages and a BullMQ worker, each its own process, offered
 * the same loads as lampline (and a max ramp), measured the same way.
 */
export async function runBaseline(
  redis: Redis,
  redisPid: number,
  settings: {
    redisUrl: string;
    keyPrefix: string;
    loads: number[];
    max: boolean;
    seconds: number;
    warmUpSeconds: number;
  },
  log: (line: string) => void,
): Promise<BaselineLoad[]> {
  const env = { REDIS_URL: settings.redisUrl, KEY_PREFIX: settings.keyPrefix };
  const stages = Array.from(
    { length: BASELINE_STAGES },
    (_, n) => new BaselineProcess("bench/baseline/stage.ts", { ...env, BASELINE_STAGE: String(n + 1) }),
  );
  const worker = new BaselineProcess("bench/baseline/worker.ts", env);
  const all = [...stages, worker];
  try {
    await Promise.all(all.map((one) => one.ready));
    const pids = () =>
      new Map<string, number[]>([
        ...stages.map((stage, n): [string, number[]] => [`stage-${n + 1}`, [stage.child.pid ?? 0]]),
        ["bullmq-worker", [worker.child.pid ?? 0]],
        ["redis-server", [redisPid]],
      ]);
    const driver = new BaselineDriver(redis, settings.keyPrefix, worker.child);
    const loads: BaselineLoad[] = [];
    const runAt = async (perSecond: number, kind: BaselineLoad["kind"]) => {
      log(`baseline: offering ${perSecond} messages/s for ${settings.seconds} s`);
      const { figures, cost } = await measured(redis, pids, () =>
        driver.offer(perSecond, settings.seconds, settings.warmUpSeconds),
      );
      const load: BaselineLoad = { kind, ...figures, cost };
      loads.push(load);
      log(`baseline:   sustained ${figures.sustainedPerSecond}/s`);
      return load;
    };
    for (const perSecond of settings.loads) await runAt(perSecond, "fixed");
    if (settings.max) {
      const best = Math.max(1, ...loads.map((load) => load.sustainedPerSecond));
      await searchMax(best, (perSecond) => runAt(perSecond, "max-step"), { factor: 2, maxSteps: 6 });
    }
    return loads;
  } finally {
    for (const one of all) one.stop();
  }
}

/** Offers messages to stage 1 at a fixed rate and asks the worker what came out. */
class BaselineDriver {
  private window = 0;
  private sequence = 0;
  private readonly replies = new Map<number, (report: WorkerReport) => void>();

  constructor(
    private readonly redis: Redis,
    private readonly prefix: string,
    private readonly worker: ChildProcess,
  ) {
    worker.on("message", (raw) => {
      const report = workerReportSchema.parse(raw);
      this.replies.get(report.window)?.(report);
    });
  }

  async offer(
    perSecond: number,
    seconds: number,
    warmUpSeconds: number,
  ): Promise<Omit<BaselineLoad, "kind" | "cost">> {
    this.window += 1;
    const window = this.window;
    const started = preciseNow();
    const from = started + warmUpSeconds * 1000;
    const to = started + seconds * 1000;
    this.command({ type: "measure", window, from, to });
    let sent = 0;
    while (preciseNow() < to) {
      const due = Math.floor(((preciseNow() - started) / 1000) * perSecond);
      if (due > sent) {
        const pipeline = this.redis.pipeline();
        for (; sent < due; sent++)
          pipeline.xadd(
            streamKey(this.prefix, 1),
            "MAXLEN",
            "~",
            BASELINE_STREAM_MAXLEN,
            "*",
            "payload",
            JSON.stringify(this.message(window)),
          );
        await pipeline.exec();
      }
      await sleep(TICK_MS);
    }
    let report = await this.report(window);
    const drainUntil = performance.now() + DRAIN_MS;
    while (report.completed < sent && performance.now() < drainUntil) {
      await sleep(50);
      report = await this.report(window);
    }
    return {
      offeredPerSecond: perSecond,
      seconds,
      sustainedPerSecond: Math.round((report.completedMeasured / ((to - from) / 1000)) * 100) / 100,
      messagesSent: sent,
      completed: report.completed,
      latency: report.latency,
    };
  }

  private message(window: number): BaselineMessage {
    this.sequence += 1;
    return {
      id: this.sequence,
      window,
      sentAt: preciseNow(),
      stage: 0,
      body: {
        deviceId: `device-${this.sequence % 30}`,
        resultId: randomUUID(),
        agentId: "agent-1",
        fullText: TEXT,
        members: [{ runId: randomUUID(), deliveryId: randomUUID() }],
      },
    };
  }

  private command(command: WorkerCommand): void {
    this.worker.send(command);
  }

  private report(window: number): Promise<WorkerReport> {
    return new Promise((resolve) => {
      this.replies.set(window, (report) => {
        this.replies.delete(window);
        resolve(report);
      });
      this.command({ type: "report", window });
    });
  }
}
