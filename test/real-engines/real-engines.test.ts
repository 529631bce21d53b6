import { afterAll, beforeAll, describe, expect, it } from "vitest";
import type { DeviceProbe } from "../e2e/acceptance/acceptance-kit.js";
import { until, type RunView, deviceOn } from "../e2e/acceptance/acceptance-kit.js";
import { E2EStack, MACHINE } from "../e2e/stack.js";
import type { TestLamp } from "../e2e/test-lamp.js";
import { modelRequestsOf, realEngineAgent, realEnginesInstalled } from "./real-engine-agent.js";

/**
 * Issue 17: the joint acceptance cases with the real Claude Code and Codex CLIs as engines behind the real
 * engine-runner (every service its own process, a Lamp on the real WebSocket), each CLI in a network namespace
 * with only loopback and the project's scripted model server on it. Needs `npm run engines:install`; in CI it
 * never skips.
 */
const installed = realEnginesInstalled();
if (!installed && process.env.CI) throw new Error("real engine CLIs missing: run npm run engines:install");
if (!installed) console.warn("real-engines suite skipped: run `npm run engines:install` first");

const AGENTS = {
  claudeSteer: "claude-steer",
  claudeAbc: "claude-abc",
  claudeQueued: "claude-queued",
  claudeInterrupt: "claude-interrupt",
  claudeError: "claude-error",
  codexSteer: "codex-steer",
  codexApproval: "codex-approval",
} as const;
/** Claude runs Bash only when told it may (as root it refuses to skip permission checks altogether). */
const CLAUDE_BASH = ["--allowedTools", "Bash(sleep:*)"];
const FAILURE_NOTICE = "That task failed. The details are on the screen.";

let stack: E2EStack;
beforeAll(async () => {
  if (!installed) return;
  stack = await E2EStack.start({
    label: "real-engines",
    startTimeoutMs: 180_000,
    agents: [],
    engines: [
      realEngineAgent({
        agentId: AGENTS.claudeSteer,
        engine: "claude",
        modelScenario: "claude-steer-held-tool",
        cliArgs: CLAUDE_BASH,
      }),
      realEngineAgent({ agentId: AGENTS.claudeQueued, engine: "claude", modelScenario: "slow-plain-reply" }),
      realEngineAgent({
        agentId: AGENTS.claudeAbc,
        engine: "claude",
        modelScenario: "claude-abc",
        cliArgs: CLAUDE_BASH,
      }),
      realEngineAgent({ agentId: AGENTS.claudeInterrupt, engine: "claude", modelScenario: "slow-stream" }),
      realEngineAgent({ agentId: AGENTS.claudeError, engine: "claude", modelScenario: "model-error" }),
      realEngineAgent({
        agentId: AGENTS.codexSteer,
        engine: "codex",
        modelScenario: "codex-steer-held-tool",
      }),
      realEngineAgent({
        agentId: AGENTS.codexApproval,
        engine: "codex",
        modelScenario: "codex-approval",
        codexApprovals: "on-request",
        codexSandbox: "read-only",
      }),
    ],
  });
}, 300_000);
afterAll(() => stack?.stop());

const device = (deviceId: string) => deviceOn(stack, deviceId);
const say = (lamp: TestLamp, agentId: string, text: string) =>
  lamp.say({ agentId, machineId: MACHINE, text });
const settledRun = (probe: DeviceProbe, runId: string) =>
  probe.runUntil(runId, (run) => run.state !== "pending", 120_000);
const requestsOf = (agentId: string) => {
  const agent = stack.agents.get(agentId);
  if (!agent) throw new Error(`no engine ${agentId}`);
  return modelRequestsOf(agent);
};
/** Resolves once the CLI has asked the scripted model `count` times. */
const modelAsked = (agentId: string, count: number) =>
  until(
    `${agentId} asked the model ${count} times`,
    async () => requestsOf(agentId),
    (requests) => requests.length >= count,
    90_000,
  );

describe
  .skipIf(!installed)
  .concurrent("the real engine CLIs behind the whole system", { timeout: 240_000 }, () => {
    for (const [agentId, engine] of [
      [AGENTS.claudeSteer, "Claude"],
      [AGENTS.codexSteer, "Codex"],
    ] as const)
      it(`${engine}: A starts a tool-use turn, B steers into it: one result for both, spoken once`, async () => {
        const { lamp, probe } = await device(`lamp-${agentId}`);
        const a = await say(lamp, agentId, "Run the check.");
        await modelAsked(agentId, 1);
        const b = await say(lamp, agentId, "Also say FOLDED.");
        const [runA, runB] = await Promise.all([settledRun(probe, a.runId), settledRun(probe, b.runId)]);
        await probe.settled();
        for (const run of [runA, runB])
          expect(run).toMatchObject({ state: "resolved", outcome: "completed", resultId: runB.resultId });
        const result = await probe.result(runB.resultId ?? "");
        expect(result?.members.map((member) => member.runId).sort()).toEqual([runA.runId, runB.runId].sort());
        // Claude wraps a message sent mid-turn in its own words ("The user sent a new message while you were working").
        expect(result?.fullText).toMatch(/^MERGED: Run the check\. \| (.|\n)*Also say FOLDED\./);
        const [utterance] = await lamp.waitForUtterances(1, 30_000);
        expect(utterance).toMatchObject({ resultId: runB.resultId });
        expect(lamp.utterances).toHaveLength(1);
        // The steered text reached the model within the same turn: with the tool's output, after A. The last request
        // after the tool is the one whose answer ended the turn (Codex may sample once more when it takes B in late).
        const followUp = requestsOf(agentId)
          .filter((request) => request.sawToolResult)
          .at(-1);
        expect(followUp?.userTexts).toHaveLength(2);
        expect(followUp?.userTexts[0]).toBe("Run the check.");
        expect(followUp?.userTexts[1]).toContain("Also say FOLDED.");
      });

    it("Claude A/B/C: B is absorbed into A's tool-use turn, C sent while its answer is written is not: two results", async () => {
      const { lamp, probe } = await device("lamp-claude-abc");
      const a = await say(lamp, AGENTS.claudeAbc, "Run the check.");
      await modelAsked(AGENTS.claudeAbc, 1);
      const b = await say(lamp, AGENTS.claudeAbc, "Also say FOLDED.");
      // The model has the tool's output (and B) and takes 4 s to answer: C now queues behind the turn.
      await modelAsked(AGENTS.claudeAbc, 2);
      const c = await say(lamp, AGENTS.claudeAbc, "And then this.");
      const [runA, runB, runC] = await Promise.all([a, b, c].map((said) => settledRun(probe, said.runId)));
      await probe.settled();
      expect(runA).toMatchObject({ state: "resolved", outcome: "completed", resultId: runB?.resultId });
      expect(runC).toMatchObject({ state: "resolved", outcome: "completed" });
      expect(runC?.resultId).not.toBe(runB?.resultId);
      const group = await probe.result(runB?.resultId ?? "");
      expect(group?.members.map((member) => member.runId).sort()).toEqual([runA?.runId, runB?.runId].sort());
      expect(group?.fullText).not.toContain("And then this.");
      expect((await probe.result(runC?.resultId ?? ""))?.members.map((member) => member.runId)).toEqual([
        runC?.runId,
      ]);
      await lamp.waitForUtterances(2, 30_000);
      expect(lamp.utterances.map((utterance) => utterance.resultId)).toEqual([
        runB?.resultId,
        runC?.resultId,
      ]);
    });

    it("Claude: B sent while a plain reply streams is queued and answered as its own result", async () => {
      const { lamp, probe } = await device("lamp-claude-queued");
      const a = await say(lamp, AGENTS.claudeQueued, "Tell me slowly.");
      await modelAsked(AGENTS.claudeQueued, 1);
      const b = await say(lamp, AGENTS.claudeQueued, "Then this.");
      const [runA, runB] = await Promise.all([settledRun(probe, a.runId), settledRun(probe, b.runId)]);
      await probe.settled();
      expect(runA).toMatchObject({ state: "resolved", outcome: "completed" });
      expect(runB).toMatchObject({ state: "resolved", outcome: "completed" });
      expect(runA.resultId).not.toBe(runB.resultId);
      expect((await probe.result(runA.resultId ?? ""))?.fullText).toBe("SLOW: Tell me slowly.");
      expect((await probe.result(runB.resultId ?? ""))?.fullText).toBe("ANSWER: Then this.");
      await lamp.waitForUtterances(2, 30_000);
      expect(lamp.utterances.map((utterance) => utterance.resultId)).toEqual([runA.resultId, runB.resultId]);
    });

    it("Claude: a cancel mid-turn interrupts the engine: the run ends cancelled and nothing is spoken", async () => {
      const { lamp, probe } = await device("lamp-claude-interrupt");
      const a = await say(lamp, AGENTS.claudeInterrupt, "Tell a long story.");
      await modelAsked(AGENTS.claudeInterrupt, 1);
      await probe.runUntil(a.runId, (run) => run.receiptState === "started", 60_000);
      await lamp.cancel(a.runId);
      const run: RunView = await settledRun(probe, a.runId);
      await probe.settled();
      expect(run).toMatchObject({ state: "resolved", outcome: "cancelled" });
      expect(run.cancelledAt).not.toBeNull();
      expect(lamp.utterances).toHaveLength(0);
      const interrupts = stack
        .engineInputs(AGENTS.claudeInterrupt)
        .filter((line) => line.type === "control_request");
      expect(interrupts).toHaveLength(1);
    });

    it("Claude: a model error fails the turn: the run resolves failed and only the failure notice is spoken", async () => {
      const { lamp, probe } = await device("lamp-claude-error");
      const a = await say(lamp, AGENTS.claudeError, "Break please.");
      const run = await settledRun(probe, a.runId);
      await probe.settled();
      expect(run).toMatchObject({ state: "resolved", outcome: "failed" });
      const [notice] = await lamp.waitForUtterances(1, 30_000);
      expect(notice).toMatchObject({ resultId: run.resultId, text: FAILURE_NOTICE });
      expect(lamp.utterances).toHaveLength(1);
    });

    it("Codex: a command approval request is answered by the agent's policy (deny) and the turn still ends", async () => {
      const { lamp, probe } = await device("lamp-codex-approval");
      const a = await say(lamp, AGENTS.codexApproval, "Write the file.");
      const run = await settledRun(probe, a.runId);
      await probe.settled();
      expect(run).toMatchObject({ state: "resolved", outcome: "completed" });
      expect((await probe.result(run.resultId ?? ""))?.fullText).toBe("DONE: the command was handled.");
      const answers = stack
        .engineInputs(AGENTS.codexApproval)
        .filter((line) => line.method === undefined && typeof line.result === "object");
      expect(answers.map((line) => line.result)).toContainEqual({ decision: "decline" });
      await lamp.waitForUtterances(1, 30_000);
      expect(lamp.utterances).toHaveLength(1);
    });
  });
