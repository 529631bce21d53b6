import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { E2EStack, MACHINE } from "../stack.js";
import type { TestLamp } from "../test-lamp.js";
import type { DeviceProbe } from "./acceptance-kit.js";
import { engineDeliveries, utterancesOf, type RunView, deviceOn } from "./acceptance-kit.js";

/**
 * Issue 12 through the whole stack: one engine process per agent serves every device. Two Lamps over the real
 * WebSocket ask the same agent (engine-sim, 2 s per turn) while its turn for the other Lamp is running: each Lamp
 * hears only its own answer, once; and a Lamp that cancels its waiting run withdraws its input (the engine never
 * sees it, nothing is interrupted) while the other Lamp's running turn goes on to be spoken.
 */
const ENGINES = {
  claude: { protocol: "claude-stream-json", scenario: "e2e-claude-slow-answer" },
  codex: { protocol: "codex-app-server", scenario: "e2e-codex-slow-answer" },
} as const;
type Engine = keyof typeof ENGINES;
const TESTS = ["two-devices", "withdraw"] as const;
const agentOf = (engine: Engine, test: (typeof TESTS)[number]) => `${engine}-${test}`;

let stack: E2EStack;
beforeAll(async () => {
  stack = await E2EStack.start({
    label: "accept-shared-engine",
    // Several stacks may boot at once on a small, busy machine: give each service more than the default minute.
    startTimeoutMs: 180_000,
    agents: (Object.keys(ENGINES) as Engine[]).flatMap((engine) =>
      TESTS.map((test) => ({ agentId: agentOf(engine, test), ...ENGINES[engine] })),
    ),
  });
}, 300_000);
afterAll(() => stack?.stop());

const device = (deviceId: string) => deviceOn(stack, deviceId);

const ask = (lamp: TestLamp, agentId: string, text: string) =>
  lamp.say({ agentId, machineId: MACHINE, text });

/** The engine is working on the run's input (its turn has started). */
const runningRun = (probe: DeviceProbe, runId: string) =>
  probe.runUntil(runId, (run) => run.receiptState === "started", 60_000);

/** Every stdin line of the agent's engine that carries `text`. */
const engineLinesWith = (agentId: string, text: string) =>
  stack.engineInputs(agentId).filter((line) => JSON.stringify(line).includes(text));

/** Interrupts written to the agent's engine: Claude's control_request, Codex's turn/interrupt. */
const interruptsOf = (agentId: string) =>
  stack
    .engineInputs(agentId)
    .filter((line) => line.type === "control_request" || line.method === "turn/interrupt");

/** The run resolved completed by a result of its own (one member: itself), which was played on its Lamp. */
async function expectAnsweredAlone(probe: DeviceProbe, run: RunView, question: string): Promise<void> {
  expect(run).toMatchObject({ state: "resolved", outcome: "completed", receiptState: "completed" });
  const result = await probe.result(run.resultId ?? "");
  expect(result).toMatchObject({
    deviceId: probe.deviceId,
    outcome: "completed",
    fullText: `ANSWER: ${question}`,
    members: [{ runId: run.runId, deliveryId: run.deliveryId, idempotencyKey: run.idempotencyKey }],
    playback: { state: "played", reason: null },
  });
}

describe.concurrent("a shared engine serves several Lamps, each its own answer", { timeout: 120_000 }, () => {
  for (const engine of Object.keys(ENGINES) as Engine[]) {
    it(`${engine}: a second Lamp asking while the first Lamp's turn runs gets its own answer; each Lamp hears only its own, once`, async () => {
      const agentId = agentOf(engine, "two-devices");
      const one = await device(`${agentId}-lamp-1`);
      const two = await device(`${agentId}-lamp-2`);
      const questionOne = "What is the time?";
      const questionTwo = "What is the weather?";
      const a = await ask(one.lamp, agentId, questionOne);
      await runningRun(one.probe, a.runId);
      const b = await ask(two.lamp, agentId, questionTwo);

      await Promise.all([one.lamp.waitForUtterances(1, 60_000), two.lamp.waitForUtterances(1, 60_000)]);
      await Promise.all([one.probe.settled(), two.probe.settled()]);
      const runA = await one.probe.run(a.runId);
      const runB = await two.probe.run(b.runId);
      await expectAnsweredAlone(one.probe, runA, questionOne);
      await expectAnsweredAlone(two.probe, runB, questionTwo);
      expect(runA.resultId).not.toBe(runB.resultId);

      expect(one.lamp.utterances).toHaveLength(1);
      expect(two.lamp.utterances).toHaveLength(1);
      expect(utterancesOf(one.lamp, runA.resultId ?? "")).toMatchObject([{ text: `ANSWER: ${questionOne}` }]);
      expect(utterancesOf(two.lamp, runB.resultId ?? "")).toMatchObject([{ text: `ANSWER: ${questionTwo}` }]);
      // Each Lamp is told about its own run only.
      expect(new Set(one.lamp.runUpdates.map((update) => update.runId))).toEqual(new Set([a.runId]));
      expect(new Set(two.lamp.runUpdates.map((update) => update.runId))).toEqual(new Set([b.runId]));

      // B reached the engine exactly once, as an input of its own after A's.
      expect(engineDeliveries(stack, agentId)).toEqual([runA.deliveryId, runB.deliveryId]);
      expect(engineLinesWith(agentId, questionTwo)).toHaveLength(1);
      expect(interruptsOf(agentId)).toHaveLength(0);
    });

    it(`${engine}: a second Lamp cancelling its waiting run withdraws it (run unknown INPUT_WITHDRAWN, nothing spoken, engine never saw it); the first Lamp's running turn is still answered once`, async () => {
      const agentId = agentOf(engine, "withdraw");
      const one = await device(`${agentId}-lamp-1`);
      const two = await device(`${agentId}-lamp-2`);
      const questionOne = "Long task.";
      const questionTwo = "Never mind this one.";
      const a = await ask(one.lamp, agentId, questionOne);
      await runningRun(one.probe, a.runId);
      const b = await ask(two.lamp, agentId, questionTwo);
      expect(await two.lamp.cancel(b.runId)).toMatchObject({ runId: b.runId, cancelled: true });

      // Wait for whichever ending comes, so a wrong one (B answered, or cancelled by an interrupt) fails here at once.
      const ended = await two.lamp.waitForRunUpdate(
        b.runId,
        (update) => update.change === "unknown" || update.change === "resolved",
        60_000,
      );
      expect(ended).toMatchObject({ state: "unknown", reason: "INPUT_WITHDRAWN" });
      await one.lamp.waitForUtterances(1, 60_000);
      await Promise.all([one.probe.settled(), two.probe.settled()]);

      const runA = await one.probe.run(a.runId);
      await expectAnsweredAlone(one.probe, runA, questionOne);
      expect(one.lamp.utterances).toHaveLength(1);
      expect(utterancesOf(one.lamp, runA.resultId ?? "")).toMatchObject([{ text: `ANSWER: ${questionOne}` }]);

      expect(await two.probe.run(b.runId)).toMatchObject({
        state: "unknown",
        outcome: null,
        reason: "INPUT_WITHDRAWN",
        resultId: null,
        receiptState: "rejected",
        cancelledAt: expect.any(String),
      });
      expect((await two.probe.receipt(b.runId))?.error?.code).toBe("INPUT_WITHDRAWN");
      expect(two.lamp.utterances).toHaveLength(0);
      expect(await two.probe.outboxStates()).toEqual([]);
      expect(
        two.lamp.runUpdates
          .filter((update) => update.change === "cancelled" || update.change === "unknown")
          .map(({ runId, change, state, reason }) => ({ runId, change, state, reason })),
      ).toEqual([
        { runId: b.runId, change: "cancelled", state: "pending", reason: undefined },
        { runId: b.runId, change: "unknown", state: "unknown", reason: "INPUT_WITHDRAWN" },
      ]);
      expect(one.lamp.runUpdates.every((update) => update.runId === a.runId)).toBe(true);

      // The engine never received B's text, and nothing was interrupted: only A was ever written.
      expect(engineLinesWith(agentId, questionTwo)).toHaveLength(0);
      expect(engineDeliveries(stack, agentId)).toEqual([runA.deliveryId]);
      expect(interruptsOf(agentId)).toHaveLength(0);
    });
  }
});
