import type { Redis } from "ioredis";
import { signToken } from "../../libs/auth/tokens.js";
import { BenchLamp } from "./bench-lamp.js";
import {
  LamplineStack,
  BENCH_MACHINE,
  BENCH_SECRET,
  type BenchAgents,
  type StackMode,
} from "./lampline-stack.js";
import { LoadGenerator, type LoadFigures } from "./load-generator.js";
import { measured, type WindowCost } from "./measured-window.js";
import { searchMax } from "./max-search.js";
import { memoryByKind, type MemoryKind } from "./memory-by-kind.js";
import { readCounters } from "./redis-stats.js";

export interface LoadSettings {
  loads: number[];
  max: boolean;
  seconds: number;
  lamps: number;
  agents: BenchAgents;
}

export interface LamplineLoad extends LoadFigures {
  kind: "fixed" | "max-step";
  cost: WindowCost;
}

export interface LamplineModeRun {
  mode: StackMode;
  /** Synthetic retained results stored before the loads (0: an empty Redis). */
  retained: number;
  loads: LamplineLoad[];
  /** used_memory growth over every load of the mode, and the results spoken meanwhile. */
  memory: { usedMemoryDelta: number; results: number };
  /** What the mode's keys hold at its end, by key shape. */
  memoryByKind: MemoryKind[];
}

/** How long after a window its groups may still be spoken before they count as lost. */
export const DRAIN_MS = 20_000;

/** The name a mode's rows carry: `lampline split`, or `lampline split +1000000 retained`. */
export function systemName(run: Pick<LamplineModeRun, "mode" | "retained">): string {
  return `lampline ${run.mode}${run.retained > 0 ? ` +${run.retained} retained` : ""}`;
}

/** One mode end to end: start the stack, connect the Lamps, warm up, offer each load, stop. */
export async function runLampline(
  mode: StackMode,
  redis: Redis,
  redisPid: number,
  settings: LoadSettings & { redisUrl: string; keyPrefix: string; workDir: string; retained: number },
  log: (line: string) => void,
): Promise<LamplineModeRun> {
  log(`${mode}: starting the services`);
  const stack = await LamplineStack.start({
    mode,
    redisUrl: settings.redisUrl,
    keyPrefix: settings.keyPrefix,
    workDir: settings.workDir,
    agents: settings.agents,
  });
  const generator = new LoadGenerator(settings.agents, BENCH_MACHINE);
  const lamps: BenchLamp[] = [];
  try {
    lamps.push(...(await connectLamps(stack, generator, settings.lamps)));
    log(`${mode}: warming up (engines start on first input)`);
    const warm = await generator.offer(5, 3, 0, 60_000);
    if (warm.lost > 0) log(`${mode}: ${warm.lost} of ${warm.groupsSent} warm-up results never spoken`);
    const pids = () => {
      const { services, engines } = stack.pids();
      const named = new Map<string, number[]>([...services].map(([name, pid]) => [name, [pid]]));
      named.set("redis-server", [redisPid]);
      named.set("engine-sim (load)", engines);
      return named;
    };
    const memoryBefore = (await readCounters(redis)).usedMemory;
    const loads: LamplineLoad[] = [];
    const runAt = async (perSecond: number, kind: LamplineLoad["kind"]) => {
      log(`${mode}: offering ${perSecond} results/s for ${settings.seconds} s`);
      const { figures, cost } = await measured(redis, pids, () =>
        generator.offer(perSecond, settings.seconds, warmUpOf(settings.seconds), DRAIN_MS),
      );
      const load: LamplineLoad = { ...figures, kind, cost };
      loads.push(load);
      log(`${mode}:   sustained ${figures.sustainedPerSecond}/s, lost ${figures.lost}`);
      return load;
    };
    for (const perSecond of settings.loads) await runAt(perSecond, "fixed");
    if (settings.max) {
      const best = Math.max(1, ...loads.map((load) => load.sustainedPerSecond));
      await searchMax(best, (perSecond) => runAt(perSecond, "max-step"), { factor: 1.5, maxSteps: 4 });
    }
    const memoryAfter = (await readCounters(redis)).usedMemory;
    const results = loads.reduce((sum, load) => sum + load.groupsSent - load.lost, 0);
    return {
      mode,
      retained: settings.retained,
      loads,
      memory: { usedMemoryDelta: memoryAfter - memoryBefore, results },
      memoryByKind: await memoryByKind(redis, settings.keyPrefix),
    };
  } finally {
    for (const lamp of lamps) lamp.close();
    await stack.stop();
  }
}

/** `count` Lamps (bench-lamp-1…) over the stack's Lamp WebSocket, acking every playback, driven by `generator`. */
export async function connectLamps(
  stack: LamplineStack,
  generator: LoadGenerator,
  count: number,
): Promise<BenchLamp[]> {
  const lamps: BenchLamp[] = [];
  for (let n = 0; n < count; n++) {
    const token = await signToken(BENCH_SECRET, {
      audience: "os",
      sub: `bench-lamp-${n + 1}`,
      role: "device",
      expiresInSeconds: 24 * 3600,
    });
    lamps.push(
      await BenchLamp.connect(stack.lampUrl, token, {
        onPlayback: (start, at) => generator.onPlayback(start, at),
        onRequestError: (code) => generator.onRequestError(code),
      }),
    );
  }
  generator.attach(lamps);
  return lamps;
}

/** The first fifth of a window (at least one second, when the window allows) is warm-up, not measured. */
export function warmUpOf(seconds: number): number {
  return seconds >= 3 ? Math.max(1, seconds / 5) : 0;
}
