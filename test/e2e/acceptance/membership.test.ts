import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { E2EStack, MACHINE } from "../stack.js";
import type { TestLamp } from "../test-lamp.js";
import type { DeviceProbe } from "./acceptance-kit.js";
import { engineDeliveries, utterancesOf, type RunView, deviceOn } from "./acceptance-kit.js";

/**
 * Seed 000 "Joint acceptance tests before enablement", lines 1–4: which runs one engine result resolves, driven
 * from the Lamp (voice requests in; utterances and the OS API out) through every service as its own process.
 * Each test has its own agent (one scripted engine-sim scenario) and its own device.
 */
const AGENTS = {
  claudeSteer: "claude-steer",
  codexSteer: "codex-steer",
  claudeQueued: "claude-queued",
  claudeAbc: "claude-abc",
  codexAbc: "codex-abc",
  claudeEcholess: "claude-echoless",
  claudeCrash: "claude-crash",
  codexCrash: "codex-crash",
} as const;

let stack: E2EStack;
beforeAll(async () => {
  stack = await E2EStack.start({
    label: "accept-members",
    // Two stacks boot at once on a small, busy machine: give each service more than the default minute.
    startTimeoutMs: 180_000,
    agents: [
      {
        agentId: AGENTS.claudeSteer,
        protocol: "claude-stream-json",
        scenario: "claude-steer-folded-at-tool-boundary",
      },
      { agentId: AGENTS.codexSteer, protocol: "codex-app-server", scenario: "codex-steer-merged" },
      {
        agentId: AGENTS.claudeQueued,
        protocol: "claude-stream-json",
        scenario: "e2e-claude-queued-consumed-later",
      },
      {
        agentId: AGENTS.claudeAbc,
        protocol: "claude-stream-json",
        scenario: "claude-abc-b-consumed-c-queued",
      },
      { agentId: AGENTS.codexAbc, protocol: "codex-app-server", scenario: "e2e-codex-abc-c-not-shown" },
      {
        agentId: AGENTS.claudeEcholess,
        protocol: "claude-stream-json",
        scenario: "e2e-claude-echoless-two-inputs",
      },
      {
        agentId: AGENTS.claudeCrash,
        protocol: "claude-stream-json",
        scenario: "claude-crash-without-result",
      },
      { agentId: AGENTS.codexCrash, protocol: "codex-app-server", scenario: "e2e-codex-crash-mid-turn" },
    ],
  });
}, 300_000);
afterAll(() => stack?.stop());

const device = (deviceId: string) => deviceOn(stack, deviceId);

const say = (lamp: TestLamp, agentId: string, text: string) =>
  lamp.say({ agentId, machineId: MACHINE, text });

const member = (run: RunView) => ({
  runId: run.runId,
  deliveryId: run.deliveryId,
  idempotencyKey: run.idempotencyKey,
});

const byRunId = <T extends { runId: string }>(list: T[]) =>
  [...list].sort((x, y) => x.runId.localeCompare(y.runId));

/** One result resolved exactly `runs` (completed), was spoken exactly once, and nothing else was spoken for it. */
async function expectOneSpokenGroup(
  probe: DeviceProbe,
  lamp: TestLamp,
  resultId: string,
  runs: RunView[],
  fullText: string,
): Promise<void> {
  for (const run of runs)
    expect(run).toMatchObject({
      state: "resolved",
      outcome: "completed",
      resultId,
      receiptState: "completed",
    });
  const result = await probe.result(resultId);
  expect(result).toMatchObject({
    outcome: "completed",
    fullText,
    playback: { state: "played", reason: null },
  });
  expect(byRunId(result?.members ?? [])).toEqual(byRunId(runs.map(member)));
  const spoken = utterancesOf(lamp, resultId);
  expect(spoken).toHaveLength(1);
  expect(spoken[0]?.text).toBe(result?.speechText);
}

describe.concurrent("seed 000 joint acceptance: result membership", { timeout: 120_000 }, () => {
  describe("A then steering B: one proven merged result resolves A/B and speaks once", () => {
    it("Claude: B folded into A's turn at a tool boundary; the result lists [A, B]", async () => {
      const { lamp, probe } = await device("lamp-l1-claude");
      const a = await say(lamp, AGENTS.claudeSteer, "Build a house.");
      const b = await say(lamp, AGENTS.claudeSteer, "Make the roof red.");
      const [utterance] = await lamp.waitForUtterances(1, 60_000);
      await probe.settled();
      const runs = [await probe.run(a.runId), await probe.run(b.runId)];
      await expectOneSpokenGroup(
        probe,
        lamp,
        utterance?.resultId ?? "",
        runs,
        "Both requests handled: FOLDED_AB",
      );
      expect(lamp.utterances).toHaveLength(1);
      expect(engineDeliveries(stack, AGENTS.claudeSteer)).toEqual(runs.map((run) => run.deliveryId));
      expect(await probe.harnessResultIds()).toEqual([utterance?.resultId]);
    });

    it("Codex: turn/steer B merged into A's running turn; the result lists [A, B]", async () => {
      const { lamp, probe } = await device("lamp-l1-codex");
      const a = await say(lamp, AGENTS.codexSteer, "Build a house.");
      const b = await say(lamp, AGENTS.codexSteer, "Make the roof red.");
      const [utterance] = await lamp.waitForUtterances(1, 60_000);
      await probe.settled();
      const runs = [await probe.run(a.runId), await probe.run(b.runId)];
      await expectOneSpokenGroup(probe, lamp, utterance?.resultId ?? "", runs, "STEERED_RESULT");
      expect(lamp.utterances).toHaveLength(1);
      const written = stack.engineInputs(AGENTS.codexSteer).map((line) => line.method);
      expect(written.filter((method) => method === "turn/start" || method === "turn/steer")).toEqual([
        "turn/start",
        "turn/steer",
      ]);
      expect(engineDeliveries(stack, AGENTS.codexSteer)).toEqual(runs.map((run) => run.deliveryId));
      expect(await probe.harnessResultIds()).toEqual([utterance?.resultId]);
    });
  });

  describe("Claude queues B but result covers only A: B remains pending until consumed and completed", () => {
    it("Claude: A's result lists [A]; B stays pending (delivered, unspoken) until the CLI runs it as its own turn", async () => {
      const { lamp, probe } = await device("lamp-l2-claude");
      const a = await say(lamp, AGENTS.claudeQueued, "First question.");
      const b = await say(lamp, AGENTS.claudeQueued, "Second question.");
      const [first] = await lamp.waitForUtterances(1, 60_000);
      await probe.settled();
      const runA = await probe.run(a.runId);
      await expectOneSpokenGroup(probe, lamp, first?.resultId ?? "", [runA], "FIRST_DONE");
      expect(await probe.run(b.runId)).toMatchObject({
        state: "pending",
        outcome: null,
        resultId: null,
        receiptState: "delivered",
      });
      expect(lamp.utterances).toHaveLength(1);

      // C makes the CLI take B off its queue: B is consumed, completes as its own result, then C.
      const c = await say(lamp, AGENTS.claudeQueued, "Third question.");
      await lamp.waitForUtterances(3, 60_000);
      await probe.settled();
      const runB = await probe.run(b.runId);
      const runC = await probe.run(c.runId);
      await expectOneSpokenGroup(probe, lamp, runB.resultId ?? "", [runB], "SECOND_DONE");
      await expectOneSpokenGroup(probe, lamp, runC.resultId ?? "", [runC], "THIRD_DONE");
      expect(new Set([first?.resultId, runB.resultId, runC.resultId]).size).toBe(3);
      expect(lamp.utterances.map((utterance) => utterance.resultId)).toEqual([
        first?.resultId,
        runB.resultId,
        runC.resultId,
      ]);
      expect(engineDeliveries(stack, AGENTS.claudeQueued)).toEqual([
        runA.deliveryId,
        runB.deliveryId,
        runC.deliveryId,
      ]);
    });
  });

  describe("A/B/C with B included and C not consumed: only A/B resolve", () => {
    it("Claude: B folded in at the tool boundary, C still in the CLI's queue", async () => {
      const { lamp, probe } = await device("lamp-l3-claude");
      const a = await say(lamp, AGENTS.claudeAbc, "A");
      const b = await say(lamp, AGENTS.claudeAbc, "B");
      const c = await say(lamp, AGENTS.claudeAbc, "C");
      const [utterance] = await lamp.waitForUtterances(1, 60_000);
      await probe.settled();
      const runs = [await probe.run(a.runId), await probe.run(b.runId)];
      await expectOneSpokenGroup(probe, lamp, utterance?.resultId ?? "", runs, "A_AND_B_DONE");
      expect(await probe.run(c.runId)).toMatchObject({
        state: "pending",
        resultId: null,
        receiptState: "delivered",
      });
      expect(lamp.utterances).toHaveLength(1);
      expect(await probe.harnessResultIds()).toEqual([utterance?.resultId]);
    });

    it("Codex: B's steer shown in the turn, C's steer acknowledged but never shown", async () => {
      const { lamp, probe } = await device("lamp-l3-codex");
      const a = await say(lamp, AGENTS.codexAbc, "A");
      const b = await say(lamp, AGENTS.codexAbc, "B");
      const c = await say(lamp, AGENTS.codexAbc, "C");
      const [utterance] = await lamp.waitForUtterances(1, 60_000);
      await probe.settled();
      const runs = [await probe.run(a.runId), await probe.run(b.runId)];
      await expectOneSpokenGroup(probe, lamp, utterance?.resultId ?? "", runs, "STEERED_RESULT");
      expect(await probe.run(c.runId)).toMatchObject({
        state: "pending",
        resultId: null,
        receiptState: "delivered",
      });
      expect(lamp.utterances).toHaveLength(1);
      expect(await probe.harnessResultIds()).toEqual([utterance?.resultId]);
    });
  });

  describe("Unknown membership: no fabricated key, completion or voice response", () => {
    it("Claude without echoed ids, two inputs outstanding at the turn end: both receipts and runs unknown, the Lamp told, no result, nothing spoken", async () => {
      const { lamp, probe } = await device("lamp-l4-echoless");
      const a = await say(lamp, AGENTS.claudeEcholess, "First, without ids.");
      const b = await say(lamp, AGENTS.claudeEcholess, "Second, without ids.");
      for (const run of [a, b]) await probe.runUntil(run.runId, (view) => view.receiptState === "unknown");
      await probe.settled();
      for (const run of [a, b]) {
        // The run ends unknown with the receipt's reason: no outcome, no result, and the Lamp is told.
        expect(await probe.run(run.runId)).toMatchObject({
          state: "unknown",
          reason: "RESULT_EVIDENCE_MISSING",
          outcome: null,
          resultId: null,
        });
        expect((await probe.receipt(run.runId))?.error?.code).toBe("RESULT_EVIDENCE_MISSING");
        expect(
          lamp.runUpdates.filter((update) => update.runId === run.runId && update.change === "unknown"),
        ).toMatchObject([{ state: "unknown", reason: "RESULT_EVIDENCE_MISSING" }]);
      }
      expect(await probe.harnessResultIds()).toEqual([]);
      expect(await probe.outboxStates()).toEqual([]);
      expect(await probe.rejections()).toEqual([]);
      expect(lamp.utterances).toHaveLength(0);
      expect(engineDeliveries(stack, AGENTS.claudeEcholess)).toHaveLength(2);
    });

    it("Claude process dies mid-turn without a result: A ends unknown and unspoken; B after the restart is answered alone", async () => {
      const { lamp, probe } = await device("lamp-l4-crash");
      const a = await say(lamp, AGENTS.claudeCrash, "This one crashes.");
      await probe.runUntil(a.runId, (view) => view.receiptState === "unknown");
      const b = await say(lamp, AGENTS.claudeCrash, "After the restart.");
      const [utterance] = await lamp.waitForUtterances(1, 60_000);
      await probe.settled();
      expect(await probe.run(a.runId)).toMatchObject({
        state: "unknown",
        reason: "ENGINE_EXITED",
        resultId: null,
      });
      expect((await probe.receipt(a.runId))?.error?.code).toBe("ENGINE_EXITED");
      await expectOneSpokenGroup(
        probe,
        lamp,
        utterance?.resultId ?? "",
        [await probe.run(b.runId)],
        "RECOVERED",
      );
      expect(lamp.utterances).toHaveLength(1);
      expect(await probe.harnessResultIds()).toEqual([utterance?.resultId]);
    });

    it("Codex app-server dies before turn/completed: the consumed input ends unknown, no result, nothing spoken", async () => {
      const { lamp, probe } = await device("lamp-l4-codex-crash");
      const a = await say(lamp, AGENTS.codexCrash, "This turn never completes.");
      await probe.runUntil(a.runId, (view) => view.receiptState === "unknown");
      await probe.settled();
      expect(await probe.run(a.runId)).toMatchObject({
        state: "unknown",
        reason: "ENGINE_EXITED",
        resultId: null,
      });
      expect((await probe.receipt(a.runId))?.error?.code).toBe("ENGINE_EXITED");
      expect(await probe.harnessResultIds()).toEqual([]);
      expect(await probe.outboxStates()).toEqual([]);
      expect(lamp.utterances).toHaveLength(0);
    });
  });
});
