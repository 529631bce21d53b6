import { describe, expect, it } from "vitest";
import { runCampaign } from "../../tools/chaos/campaign.js";
import { formatReport } from "../../tools/chaos/report.js";

const SEED = "lampline-ci-1";

describe("fault campaign (fixed seed, every service its own process, private Redis with AOF)", () => {
  it("under service kills, Redis restarts and Lamp drops/lost acks nothing is lost, spoken twice, resolved unlisted or sent twice", async () => {
    const outcome = await runCampaign({
      seed: SEED,
      results: 30,
      resultsPerFault: 5,
      agentReplicas: 1,
      drainMaxMs: 60_000,
      log: () => undefined,
    });
    const report = formatReport(outcome);
    const figures = outcome.verdict.figures;
    expect(outcome.verdict.violations, report).toEqual([]);
    expect(outcome.faults.map((fault) => fault.index).sort((a, b) => a - b)).toEqual(
      outcome.plan.faults.map((fault) => fault.index),
    );
    expect(new Set(outcome.plan.faults.map((fault) => fault.action.kind)).size).toBe(5);
    expect(figures.resultsProduced, report).toBeGreaterThan(0);
    expect(figures.resultsSpoken, report).toBeGreaterThan(0);
    expect(figures.resultsStoredByOs, report).toBe(figures.resultsProduced);
  }, 240_000);
});
