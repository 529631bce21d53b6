import { describe, expect, it } from "vitest";
import { runCampaign } from "../../tools/chaos/campaign.js";
import { formatReport } from "../../tools/chaos/report.js";

const SEED = "lampline-ci-1";

describe("fault campaign (fixed seed, every service its own process, private Redis with AOF)", () => {
  it("under service kills and pauses, Redis restarts and maxmemory squeezes, Lamp drops, a Lamp away for over a minute, lost acks and cancels: nothing is lost, spoken twice or after a cancel, resolved unlisted or sent twice; every run ends by its deadline and each Lamp hears exactly its own run.updates, in order", async () => {
    const outcome = await runCampaign({
      seed: SEED,
      results: 30,
      // Eight drawn faults: the first seven cover every drawn kind once.
      resultsPerFault: 4,
      agentReplicas: 1,
      cancelShare: 0.2,
      // One outage just over a minute, overlapping the traffic; more stay for `npm run chaos`.
      outages: 1,
      outageMs: 62_000,
      voiceTargetTtlMs: 75_000,
      runDeadlineGraceMs: 10_000,
      drainMaxMs: 120_000,
      log: () => undefined,
    });
    const report = formatReport(outcome);
    const figures = outcome.verdict.figures;
    expect(outcome.verdict.violations, report).toEqual([]);
    expect(outcome.faults.map((fault) => fault.index).sort((a, b) => a - b)).toEqual(
      outcome.plan.faults.map((fault) => fault.index),
    );
    expect(new Set(outcome.plan.faults.map((fault) => fault.action.kind)).size).toBe(8);
    expect(figures.resultsProduced, report).toBeGreaterThan(0);
    expect(figures.resultsSpoken, report).toBeGreaterThan(0);
    expect(figures.resultsStoredByOs, report).toBe(figures.resultsProduced);
    expect(outcome.traffic.cancels.length, report).toBeGreaterThan(0);
    expect(figures.runUpdatesReceived, report).toBeGreaterThan(0);
    expect(figures.replaysAnswered, report).toBeGreaterThan(outcome.plan.devices.length);
  }, 420_000);
});
