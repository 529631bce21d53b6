import type { Redis } from "ioredis";
import { ProcessWindow, type ProcessFigures } from "./process-sampler.js";
import { readCounters, redisDelta, type RedisDelta } from "./redis-stats.js";

/** What the processes and Redis spent while one load ran. */
export interface WindowCost {
  processes: ProcessFigures[];
  redis: RedisDelta;
}

/**
 * Runs `load` between two samples of every process (CPU, peak RSS) and of Redis (commandstats, socket reads,
 * memory). `load` returns the moment its measured part started, which the caller cannot know beforehand when a
 * warm-up precedes it; the costs cover the whole window, warm-up included, and are divided by its results.
 */
export async function measured<T>(
  redis: Redis,
  pids: () => Map<string, number[]>,
  load: () => Promise<T>,
): Promise<{ figures: T; cost: WindowCost }> {
  const before = await readCounters(redis);
  const processes = new ProcessWindow(pids);
  const figures = await load();
  const processFigures = processes.close();
  const after = await readCounters(redis);
  return { figures, cost: { processes: processFigures, redis: redisDelta(before, after) } };
}
