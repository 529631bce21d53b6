/**
 * "max": open loop at rising offered loads until sustained throughput stops rising. Starts at `factor` × the best
 * sustained rate seen at the fixed loads and offers `factor` × the last sustained rate each step; stops when a step
 * sustains less than 5 % more than the best so far, or after `maxSteps`.
 */
export async function searchMax<T extends { sustainedPerSecond: number }>(
  bestSoFar: number,
  runAt: (perSecond: number) => Promise<T>,
  options: { factor: number; maxSteps: number },
): Promise<T[]> {
  const steps: T[] = [];
  let best = bestSoFar;
  let offered = Math.max(1, Math.round(bestSoFar * options.factor));
  for (let step = 0; step < options.maxSteps; step++) {
    const result = await runAt(offered);
    steps.push(result);
    if (result.sustainedPerSecond < best * 1.05) break;
    best = result.sustainedPerSecond;
    offered = Math.round(result.sustainedPerSecond * options.factor);
  }
  return steps;
}
