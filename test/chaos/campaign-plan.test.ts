import { describe, expect, it } from "vitest";
import { planCampaign, RESULTS_PER_TURN } from "../../tools/chaos/campaign-plan.js";
import { Prng } from "../../tools/chaos/prng.js";

const options = {
  seed: "plan-seed",
  results: 120,
  resultsPerFault: 10,
  agentReplicas: 1,
  cancelShare: 0.1,
  outages: 2,
  outageMs: 65_000,
  voiceTargetTtlMs: 90_000,
  runDeadlineGraceMs: 15_000,
};

describe("campaign plan", () => {
  it("the same seed gives the same traffic and fault schedule", () => {
    expect(planCampaign(options)).toEqual(planCampaign(options));
  });

  it("another seed gives other traffic and another schedule", () => {
    const a = planCampaign(options);
    const b = planCampaign({ ...options, seed: "other-seed" });
    expect(b.turns.map((t) => t.agentId)).not.toEqual(a.turns.map((t) => t.agentId));
    expect(b.faults.map((f) => f.afterTurn)).not.toEqual(a.faults.map((f) => f.afterTurn));
  });

  it("plans turns until the expected results reach the requested number", () => {
    const plan = planCampaign(options);
    const style = new Map(plan.agents.map((agent) => [agent.agentId, agent.style]));
    const expected = plan.turns.map((turn) => RESULTS_PER_TURN[style.get(turn.agentId) ?? "each"]);
    const total = expected.reduce((sum, n) => sum + n, 0);
    expect(total).toBeGreaterThanOrEqual(120);
    expect(total - (expected.at(-1) ?? 0)).toBeLessThan(120);
  });

  it("steering and queueing agents get pairs from one device, answer-each agents single inputs", () => {
    const plan = planCampaign(options);
    const style = new Map(plan.agents.map((agent) => [agent.agentId, agent.style]));
    for (const turn of plan.turns)
      expect(turn.inputs).toHaveLength(style.get(turn.agentId) === "each" ? 1 : 2);
    expect(new Set(plan.agents.map((agent) => agent.style))).toEqual(new Set(["each", "fold", "queue"]));
  });

  it("the schedule covers every fault kind, in firing order, inside the traffic", () => {
    const plan = planCampaign(options);
    expect(plan.faults).toHaveLength(12 + 2);
    expect(new Set(plan.faults.map((f) => f.action.kind))).toEqual(
      new Set([
        "kill-service",
        "pause-service",
        "restart-redis",
        "squeeze-redis",
        "lamp-drop",
        "lamp-ack-late",
        "lamp-no-ack",
        "lamp-outage",
      ]),
    );
    const order = plan.faults.map((f) => f.afterTurn * 10_000 + f.delayMs);
    expect(order).toEqual([...order].sort((a, b) => a - b));
    for (const fault of plan.faults) expect(fault.afterTurn).toBeLessThan(plan.turns.length);
  });

  it("plans the requested number of long outages, each as long as asked, on a Lamp's own track", () => {
    const plan = planCampaign({ ...options, outages: 3, outageMs: 70_000 });
    const outages = plan.faults.filter((f) => f.action.kind === "lamp-outage");
    expect(outages).toHaveLength(3);
    for (const fault of outages)
      expect(fault).toMatchObject({
        track: `lamp:${fault.action.kind === "lamp-outage" ? fault.action.deviceId : ""}`,
        action: { downMs: 70_000 },
      });
    expect(planCampaign({ ...options, outages: 0 }).faults.some((f) => f.action.kind === "lamp-outage")).toBe(
      false,
    );
  });

  it("cancels the requested share of turns, at both moments, never together with a repeat", () => {
    const plan = planCampaign({ ...options, cancelShare: 0.2 });
    const cancelled = plan.turns.filter((turn) => turn.cancel);
    expect(cancelled).toHaveLength(Math.round(plan.turns.length * 0.2));
    expect(new Set(cancelled.map((turn) => turn.cancel?.moment))).toEqual(
      new Set(["pending", "after-result"]),
    );
    for (const turn of cancelled) {
      expect(turn.askRepeat).toBe(false);
      expect(turn.cancel?.input).toBeLessThan(turn.inputs.length);
    }
    expect(planCampaign({ ...options, cancelShare: 0 }).turns.some((turn) => turn.cancel)).toBe(false);
  });

  it("ordinary voice targets live for the planned TTL and the plan carries the run deadline", () => {
    const plan = planCampaign(options);
    const expiries = new Set(plan.turns.flatMap((turn) => turn.inputs.map((input) => input.expiresInMs)));
    expect(expiries).toEqual(new Set([90_000, 200]));
    expect(plan.deadlines).toMatchObject({ voiceTargetTtlMs: 90_000, graceMs: 15_000 });
  });
});

describe("Prng", () => {
  it("is deterministic per seed and forks independent streams", () => {
    const draw = (random: Prng) => Array.from({ length: 5 }, () => random.int(0, 1_000_000));
    expect(draw(Prng.fromSeed("x"))).toEqual(draw(Prng.fromSeed("x")));
    expect(draw(Prng.fromSeed("x"))).not.toEqual(draw(Prng.fromSeed("y")));
    expect(draw(Prng.fromSeed("x").fork("a"))).not.toEqual(draw(Prng.fromSeed("x").fork("b")));
  });

  it("draws integers inside the closed range", () => {
    const random = Prng.fromSeed("range");
    const values = Array.from({ length: 2_000 }, () => random.int(3, 7));
    expect(new Set(values)).toEqual(new Set([3, 4, 5, 6, 7]));
  });
});
