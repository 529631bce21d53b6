import { afterAll, beforeAll, describe, expect, it } from "vitest";
import type { TurnResultPayload } from "../../../libs/contract/turn-result.js";
import { E2EStack, MACHINE } from "../stack.js";
import type { SayOptions, TestLamp } from "../test-lamp.js";
import type { DeviceProbe } from "./acceptance-kit.js";
import { engineDeliveries, until, type RunView, deviceOn } from "./acceptance-kit.js";
import { forgeHarnessResult, harnessInstance } from "./harness-forgery.js";

/**
 * Seed 000 "Joint acceptance tests before enablement", lines 6–7: results that must not be applied (wrong
 * identities) and results that must not be spoken (mixed destinations, cancelled runs, expired routes, failed
 * results), driven from the Lamp and, for the wrong identities, from the Harness store the gateway serves.
 */
const AGENTS = {
  held: "claude-held",
  otherOwner: "claude-other-owner",
  foldMixed: "claude-fold-mixed",
  foldCancelNewest: "claude-fold-cancel-newest",
  foldCancelOlder: "claude-fold-cancel-older",
  slow: "claude-slow",
  authFailure: "claude-auth-failure",
  codexFailed: "codex-failed",
  interrupted: "claude-interrupted",
} as const;

let stack: E2EStack;
beforeAll(async () => {
  stack = await E2EStack.start({
    label: "accept-routing",
    // Two stacks boot at once on a small, busy machine: give each service more than the default minute.
    startTimeoutMs: 180_000,
    agents: [
      { agentId: AGENTS.held, protocol: "claude-stream-json", scenario: "claude-queued-to-next-turn" },
      { agentId: AGENTS.otherOwner, protocol: "claude-stream-json", scenario: "claude-answer-each-input" },
      { agentId: AGENTS.foldMixed, protocol: "claude-stream-json", scenario: "e2e-claude-fold-slow" },
      { agentId: AGENTS.foldCancelNewest, protocol: "claude-stream-json", scenario: "e2e-claude-fold-slow" },
      { agentId: AGENTS.foldCancelOlder, protocol: "claude-stream-json", scenario: "e2e-claude-fold-slow" },
      { agentId: AGENTS.slow, protocol: "claude-stream-json", scenario: "e2e-claude-slow-answer" },
      { agentId: AGENTS.authFailure, protocol: "claude-stream-json", scenario: "claude-auth-failure-401" },
      { agentId: AGENTS.codexFailed, protocol: "codex-app-server", scenario: "codex-failed-turn" },
      {
        agentId: AGENTS.interrupted,
        protocol: "claude-stream-json",
        scenario: "claude-interrupt-cancels-queued",
      },
    ],
  });
}, 300_000);
afterAll(() => stack?.stop());

const device = (deviceId: string) => deviceOn(stack, deviceId);

const say = (lamp: TestLamp, agentId: string, text: string, options: Partial<SayOptions> = {}) =>
  lamp.say({ agentId, machineId: MACHINE, text, ...options });

const resolvedRun = (probe: DeviceProbe, runId: string) =>
  probe.runUntil(runId, (run) => run.state === "resolved");

/** The run's result, stored and retained for retrieval, with its outbox entry. */
async function storedResultOf(probe: DeviceProbe, run: RunView) {
  const result = await probe.result(run.resultId ?? "");
  if (!result) throw new Error(`run ${run.runId} names result ${run.resultId}, which is not stored`);
  return result;
}

describe.concurrent("seed 000 joint acceptance: routing and speech", { timeout: 120_000 }, () => {
  it("Wrong key, deliveryId, agent, owner, or instance: no partial application or fallback", async () => {
    const { lamp, probe } = await device("lamp-l6");
    const other = await device("lamp-l6-owner");
    const a = await say(lamp, AGENTS.held, "Pending question.");
    const x = await say(other.lamp, AGENTS.otherOwner, "Another owner's question.");
    const [runA] = await Promise.all([
      probe.runUntil(a.runId, (run) => run.receiptState === "started"),
      other.lamp.waitForUtterances(1, 60_000),
    ]);
    const runX = await resolvedRun(other.probe, x.runId);
    const instance = await harnessInstance(stack);
    const realA = { deliveryId: runA.deliveryId ?? "", idempotencyKey: runA.idempotencyKey };
    const realX = { deliveryId: runX.deliveryId ?? "", idempotencyKey: runX.idempotencyKey };
    const forged = (
      resultId: string,
      inputs: TurnResultPayload["correlation"]["inputs"],
      serverInstanceId = instance,
    ): TurnResultPayload => ({
      serverInstanceId,
      resultId,
      correlation: inputs.length === 1 ? { scope: "input", inputs } : { scope: "group", inputs },
      outcome: "completed",
      fullText: `FORGED ${resultId}`,
    });
    const cases = [
      {
        reason: "KEY_MISMATCH",
        agentId: AGENTS.held,
        payload: forged("forged-key", [{ ...realA, idempotencyKey: "forged-key-a" }]),
      },
      {
        reason: "DELIVERY_MISMATCH",
        agentId: AGENTS.held,
        payload: forged("forged-delivery", [{ ...realA, deliveryId: "forged-delivery-a" }]),
      },
      { reason: "AGENT_MISMATCH", agentId: AGENTS.otherOwner, payload: forged("forged-agent", [realA]) },
      { reason: "UNKNOWN_MEMBER", agentId: AGENTS.held, payload: forged("forged-owner", [realA, realX]) },
      {
        reason: "INSTANCE_MISMATCH",
        agentId: AGENTS.held,
        payload: forged("forged-instance", [realA], "forged-instance"),
      },
    ];
    for (const { agentId, payload } of cases)
      await forgeHarnessResult(stack, { deviceId: "lamp-l6", agentId, payload });

    await until(
      "every forged event rejected",
      () => probe.rejections(),
      (list) => list.length >= cases.length,
    );
    await probe.settled();
    const rejections = await probe.rejections();
    expect(
      rejections.map(({ reason, resultId, rejectedBy }) => ({ reason, resultId, rejectedBy })).reverse(),
    ).toEqual(
      cases.map(({ reason, payload }) => ({ reason, resultId: payload.resultId, rejectedBy: "router" })),
    );
    // Nothing of any forged event was applied: A is untouched, no result is stored, nothing was spoken.
    expect(await probe.run(a.runId)).toMatchObject({ state: "pending", outcome: null, resultId: null });
    for (const { payload } of cases) expect(await probe.result(payload.resultId)).toBeUndefined();
    expect(await probe.outboxStates()).toEqual([]);
    expect(lamp.utterances).toHaveLength(0);
    // The other owner's run named in the forged group is still resolved by its own result only.
    expect(await other.probe.run(x.runId)).toEqual(runX);
    expect(other.lamp.utterances).toHaveLength(1);
    expect(await other.probe.rejections()).toEqual([]);

    // No fallback either way: the genuine results still resolve exactly their own runs, spoken once each.
    const b = await say(lamp, AGENTS.held, "Next question.");
    await lamp.waitForUtterances(2, 60_000);
    await probe.settled();
    const [finalA, finalB] = [await probe.run(a.runId), await probe.run(b.runId)];
    expect(finalA).toMatchObject({ state: "resolved", outcome: "completed" });
    expect(finalB).toMatchObject({ state: "resolved", outcome: "completed" });
    expect((await storedResultOf(probe, finalA)).members).toEqual([{ runId: a.runId, ...realA }]);
    expect((await storedResultOf(probe, finalA)).fullText).toBe("FIRST_DONE");
    expect((await storedResultOf(probe, finalB)).fullText).toBe("SECOND_DONE");
    expect(lamp.utterances.map((utterance) => utterance.resultId)).toEqual([
      finalA.resultId,
      finalB.resultId,
    ]);
    expect(await probe.rejections()).toHaveLength(cases.length);
  });

  describe("Mixed voice destinations, cancelled runs, expired routes and failed results: no wrong Lamp response; outcomes remain distinct from input acceptance", () => {
    it("a group spanning two voice targets is resolved but suppressed (mixed_destinations), never spoken to either", async () => {
      const { lamp, probe } = await device("lamp-l7-mixed");
      const a = await say(lamp, AGENTS.foldMixed, "Kitchen asks.", { voiceTargetId: "kitchen" });
      const b = await say(lamp, AGENTS.foldMixed, "Desk asks.", { voiceTargetId: "desk" });
      const runB = await resolvedRun(probe, b.runId);
      await probe.settled();
      const runA = await probe.run(a.runId);
      for (const run of [runA, runB])
        expect(run).toMatchObject({
          outcome: "completed",
          resultId: runB.resultId,
          receiptState: "completed",
        });
      expect((await storedResultOf(probe, runB)).playback).toMatchObject({
        state: "suppressed",
        reason: "mixed_destinations",
      });
      expect(lamp.utterances).toHaveLength(0);
    });

    it("a cancel of the newest member suppresses the group's answer (cancelled); the engine still completed both inputs", async () => {
      const { lamp, probe } = await device("lamp-l7-cancel-newest");
      const a = await say(lamp, AGENTS.foldCancelNewest, "Start something.");
      const b = await say(lamp, AGENTS.foldCancelNewest, "Add to it.");
      // A stop interrupts only once the input it names is consumed into the running turn (not merely queued).
      await probe.runUntil(b.runId, (run) => run.receiptState === "started");
      expect(await lamp.cancel(b.runId)).toMatchObject({ type: "voice.cancel_result" });
      const runB = await resolvedRun(probe, b.runId);
      await probe.settled();
      const runA = await probe.run(a.runId);
      expect(runB.cancelledAt).not.toBeNull();
      for (const run of [runA, runB])
        expect(run).toMatchObject({
          outcome: "completed",
          resultId: runB.resultId,
          receiptState: "completed",
        });
      expect((await storedResultOf(probe, runB)).playback).toMatchObject({
        state: "suppressed",
        reason: "cancelled",
      });
      expect(lamp.utterances).toHaveLength(0);
      const interrupts = stack
        .engineInputs(AGENTS.foldCancelNewest)
        .filter((line) => line.type === "control_request");
      expect(interrupts).toHaveLength(1);
    });

    it("a cancel of an older member does not suppress: the newest member's route speaks the group once", async () => {
      const { lamp, probe } = await device("lamp-l7-cancel-older");
      const a = await say(lamp, AGENTS.foldCancelOlder, "Start something.", { voiceTargetId: "first" });
      const b = await say(lamp, AGENTS.foldCancelOlder, "Add to it.", { voiceTargetId: "first" });
      await lamp.cancel(a.runId);
      const [utterance] = await lamp.waitForUtterances(1, 60_000);
      await probe.settled();
      const runB = await probe.run(b.runId);
      expect(utterance).toMatchObject({ resultId: runB.resultId, voiceTargetId: "first" });
      expect((await storedResultOf(probe, runB)).playback).toMatchObject({ state: "played", reason: null });
      expect(lamp.utterances).toHaveLength(1);
    });

    it("a voice target that expired while the engine worked is suppressed (expired); a live one is spoken", async () => {
      const { lamp, probe } = await device("lamp-l7-expired");
      const expiresAt = new Date(Date.now() + 1_000).toISOString();
      const a = await say(lamp, AGENTS.slow, "Short-lived question.", { expiresAt });
      const runA = await resolvedRun(probe, a.runId);
      await probe.settled();
      expect(runA).toMatchObject({ outcome: "completed", receiptState: "completed" });
      expect((await storedResultOf(probe, runA)).playback).toMatchObject({
        state: "suppressed",
        reason: "expired",
      });
      expect(lamp.utterances).toHaveLength(0);

      const b = await say(lamp, AGENTS.slow, "Question with a live target.");
      const [utterance] = await lamp.waitForUtterances(1, 60_000);
      const runB = await resolvedRun(probe, b.runId);
      await probe.settled();
      expect(utterance?.resultId).toBe(runB.resultId);
      expect(lamp.utterances).toHaveLength(1);
      expect(engineDeliveries(stack, AGENTS.slow)).toEqual([runA.deliveryId, runB.deliveryId]);
    });

    it("Claude auth failure (is_error, 401): run resolved failed, receipt stays started (never completed), only the failure notice spoken", async () => {
      const { lamp, probe } = await device("lamp-l7-claude-failed");
      const a = await say(lamp, AGENTS.authFailure, "Anything.");
      const run = await resolvedRun(probe, a.runId);
      await probe.settled();
      await expectFailedUnspoken(probe, lamp, run, "failed");
      await expectFailureNotice(lamp, run);
    });

    it("Codex failed turn: run resolved failed, receipt stays started (never completed), only the failure notice spoken", async () => {
      const { lamp, probe } = await device("lamp-l7-codex-failed");
      const a = await say(lamp, AGENTS.codexFailed, "Anything.");
      const run = await resolvedRun(probe, a.runId);
      await probe.settled();
      await expectFailedUnspoken(probe, lamp, run, "failed");
      await expectFailureNotice(lamp, run);
    });

    it("a cancel that interrupts the engine: A resolved cancelled and unspoken, the queued B it cancelled ends unknown with its receipt's reason", async () => {
      const { lamp, probe } = await device("lamp-l7-interrupted");
      const a = await say(lamp, AGENTS.interrupted, "Long task.");
      const b = await say(lamp, AGENTS.interrupted, "Queued behind it.");
      await probe.runUntil(b.runId, (run) => run.receiptState === "delivered");
      await lamp.cancel(a.runId);
      const runA = await resolvedRun(probe, a.runId);
      await probe.runUntil(b.runId, (run) => run.receiptState === "unknown");
      await probe.settled();
      await expectFailedUnspoken(probe, lamp, runA, "cancelled");
      expect(lamp.utterances).toHaveLength(0);
      expect(await probe.run(b.runId)).toMatchObject({
        state: "unknown",
        reason: "RESULT_EVIDENCE_MISSING",
        outcome: null,
        resultId: null,
      });
      expect((await probe.receipt(b.runId))?.error?.code).toBe("RESULT_EVIDENCE_MISSING");
    });
  });
});

/** A failed or cancelled result: the run resolved with that outcome, the receipt not completed, the answer unspoken. */
async function expectFailedUnspoken(
  probe: DeviceProbe,
  lamp: TestLamp,
  run: RunView,
  outcome: "failed" | "cancelled",
): Promise<void> {
  expect(run).toMatchObject({ state: "resolved", outcome });
  expect(run.receiptState).toBe("started");
  const result = await storedResultOf(probe, run);
  expect(result.outcome).toBe(outcome);
  expect(result.playback).toMatchObject({ state: "suppressed", reason: `${outcome}_result` });
  expect(lamp.utterances.filter((utterance) => utterance.text === result.fullText)).toHaveLength(0);
  expect(
    lamp.runUpdates.filter((update) => update.runId === run.runId && update.change === "resolved"),
  ).toMatchObject([{ state: "resolved", outcome, resultId: run.resultId }]);
}

/** A failed result speaks the short notice once, never its fullText, to the run's voice target. */
async function expectFailureNotice(lamp: TestLamp, run: RunView): Promise<void> {
  const [notice] = await lamp.waitForUtterances(1, 30_000);
  expect(notice).toMatchObject({
    resultId: run.resultId,
    voiceTargetId: run.voiceTarget.id,
    text: "That task failed. The details are on the screen.",
  });
  expect(lamp.utterances).toHaveLength(1);
}
