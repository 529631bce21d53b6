import { expect, it } from "vitest";
import { measureWorkPerResult } from "./work-per-result.js";

/**
 * A regression bound on the Redis work and CPU one engine result costs through the whole stack (issue 16): a cut
 * that silently regresses fails here. The figures are printed so a run doubles as the measurement
 * (docs/performance.md, "Work per result").
 */
it("one result costs a bounded number of Redis commands and round trips", { timeout: 600_000 }, async () => {
  const work = await measureWorkPerResult({
    singleLamps: 8,
    questionsPerLamp: 5,
    steeredLamps: 4,
    monitor: process.env.WORK_MONITOR !== "0",
  });
  console.log(JSON.stringify(work, null, 2));
  expect(work.results).toBe(44);
  // Bounds with headroom over the figures in docs/performance.md ("Work per result"), not the goals.
  expect(work.commands).toBeGreaterThan(10);
  expect(work.commands).toBeLessThanOrEqual(360);
  expect(work.roundTrips).toBeLessThanOrEqual(80);
  if (work.clientCommands !== undefined) expect(work.clientCommands).toBeLessThanOrEqual(125);
});
