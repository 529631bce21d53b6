import { afterAll, beforeAll, describe, it } from "vitest";
import type { RunUpdateFrame } from "../../../libs/contract/run-update.js";
import { E2EStack, MACHINE } from "../stack.js";
import type { SayOptions, TestLamp } from "../test-lamp.js";
import { DeviceProbe, engineDeliveries, until, utterancesOf } from "./acceptance-kit.js";

/**
 * Issue 11: every voice request ends, and the Lamp knows how. Each ending a voice user can meet, through the real Lamp
 * WebSocket with every service its own process: what the Lamp hears (playback.start) and what it is told
 * (run.update), including while it was away.
 */
const AGENTS = {
  failing: "claude-auth-failure",
  cancelled: "claude-cancelled",
  killed: "claude-killed",
  late: "claude-late",
  expired: "claude-expired",
  mixed: "claude-fold-mixed",
  repeat: "claude-repeat",
  queued: "claude-queued",
} as const;

const NOTICE = "That task failed. The details are on the screen.";
/** The outage of the late-delivery case: well past the ~30 s of retries an offline Lamp used to get. */
const OUTAGE_MS = 90_000;

let stack: E2EStack;
beforeAll(async () => {
  stack = await E2EStack.start({
    label: "accept-endings",
    startTimeoutMs: 180_000,
    agents: [
      { agentId: AGENTS.failing, protocol: "claude-stream-json", scenario: "claude-auth-failure-401" },
      { agentId: AGENTS.cancelled, protocol: "claude-stream-json", scenario: "e2e-claude-slow-answer" },
      {
        agentId: AGENTS.killed,
        protocol: "claude-stream-json",
        scenario: "e2e-claude-slow-answer",
        advanceRuntimes: false,
      },
      { agentId: AGENTS.late, protocol: "claude-stream-json", scenario: "e2e-claude-slow-answer" },
      { agentId: AGENTS.expired, protocol: "claude-stream-json", scenario: "e2e-claude-slow-answer" },
      { agentId: AGENTS.mixed, protocol: "claude-stream-json", scenario: "e2e-claude-fold-slow" },
      { agentId: AGENTS.repeat, protocol: "claude-stream-json", scenario: "claude-answer-each-input" },
      { agentId: AGENTS.queued, protocol: "claude-stream-json", scenario: "claude-queued-to-next-turn" },
    ],
  });
}, 300_000);
afterAll(() => stack?.stop());

/** Runs each device asked for, so the last test can prove no device was told about another's. */
const runsOf = new Map<string, Set<string>>();
const lampsOf = new Map<string, TestLamp[]>();

async function device(deviceId: string): Promise<{ lamp: TestLamp; probe: DeviceProbe }> {
  const lamp = await stack.lamp(deviceId);
  lampsOf.set(deviceId, [...(lampsOf.get(deviceId) ?? []), lamp]);
  return { lamp, probe: new DeviceProbe(stack, deviceId) };
}

async function say(
  lamp: TestLamp,
  deviceId: string,
  agentId: string,
  text: string,
  options: Partial<SayOptions> = {},
) {
  const asked = await lamp.say({ agentId, machineId: MACHINE, text, ...options });
  runsOf.set(deviceId, (runsOf.get(deviceId) ?? new Set()).add(asked.runId));
  return asked;
}

const updatesOf = (lamp: TestLamp, runId: string) =>
  lamp.runUpdates.filter((update) => update.runId === runId);
const lastUpdateId = (lamp: TestLamp) => Math.max(0, ...lamp.runUpdates.map((update) => update.updateId));

// Concurrent: each case has its own device and agent, and the 90 s outage overlaps the others.
describe.concurrent("Every voice request ends, and the Lamp knows how", { timeout: 150_000 }, () => {
  it("a failed result speaks the short notice once, never its text, and the Lamp is told it failed; a repeat of it is refused", async ({
    expect,
  }) => {
    const { lamp, probe } = await device("lamp-end-failed");
    const a = await say(lamp, "lamp-end-failed", AGENTS.failing, "Anything.");
    const resolved = await lamp.waitForRunUpdate(a.runId, (update) => update.change === "resolved", 60_000);
    expect(resolved).toMatchObject({ state: "resolved", outcome: "failed", requestId: a.requestId });
    const [notice] = await lamp.waitForUtterances(1, 60_000);
    await probe.settled();
    const run = await probe.run(a.runId);
    const result = await probe.result(run.resultId ?? "");
    expect(notice).toMatchObject({ resultId: run.resultId, voiceTargetId: "target-1", text: NOTICE });
    expect(result?.fullText).not.toBe(NOTICE);
    expect(lamp.utterances).toHaveLength(1);
    expect(updatesOf(lamp, a.runId).filter((update) => update.change === "suppressed")).toMatchObject([
      { state: "resolved", outcome: "failed", reason: "failed_result" },
    ]);
    expect(await lamp.repeat(run.resultId ?? "")).toMatchObject({ error: { code: "NOT_REPEATABLE" } });
    await probe.settled();
    expect(lamp.utterances).toHaveLength(1);
  });

  it("a cancelled run says nothing; the Lamp is told it was cancelled and that its answer was withheld", async ({
    expect,
  }) => {
    const { lamp, probe } = await device("lamp-end-cancel");
    const a = await say(lamp, "lamp-end-cancel", AGENTS.cancelled, "Start a long task.");
    await lamp.cancel(a.runId);
    expect(
      await lamp.waitForRunUpdate(a.runId, (update) => update.change === "cancelled", 60_000),
    ).toMatchObject({
      state: "pending",
      requestId: a.requestId,
    });
    const withheld = await lamp.waitForRunUpdate(a.runId, (update) => update.change === "suppressed", 60_000);
    await probe.settled();
    expect(["cancelled", "cancelled_result"]).toContain(withheld.reason);
    expect(await probe.run(a.runId)).toMatchObject({ state: "resolved" });
    expect(lamp.utterances).toHaveLength(0);
  });

  it("the engine is SIGKILLed after the input reached it: the run ends unknown with the reason and the Lamp is told", async ({
    expect,
  }) => {
    const { lamp, probe } = await device("lamp-end-killed");
    const a = await say(lamp, "lamp-end-killed", AGENTS.killed, "This engine will be killed.");
    const bound = await probe.runUntil(a.runId, (run) => run.deliveryId !== null);
    await until(
      "input written to the engine",
      async () => engineDeliveries(stack, AGENTS.killed),
      (written) => written.includes(bound.deliveryId ?? ""),
    );
    expect(stack.killEngine(AGENTS.killed)).toBeGreaterThan(0);
    const ended = await lamp.waitForRunUpdate(a.runId, (update) => update.change === "unknown", 60_000);
    expect(ended).toMatchObject({ state: "unknown", reason: "ENGINE_EXITED" });
    await probe.settled();
    expect(await probe.run(a.runId)).toMatchObject({
      state: "unknown",
      reason: "ENGINE_EXITED",
      resultId: null,
    });
    expect(lamp.utterances).toHaveLength(0);
  });

  it("the Lamp is offline 90 s and comes back while its target is valid: the answer waited and is spoken once", async ({
    expect,
  }) => {
    const deviceId = "lamp-end-late";
    const { lamp, probe } = await device(deviceId);
    const a = await say(lamp, deviceId, AGENTS.late, "Tell me when I am back.");
    lamp.drop();
    const droppedAt = Date.now();
    const run = await probe.runUntil(a.runId, (view) => view.state === "resolved", 60_000);
    // The run resolves a moment before the tts-dispatcher has queued its answer.
    const playbackState = async () => (await probe.result(run.resultId ?? ""))?.playback?.state;
    await until("the answer queued for the Lamp", playbackState, (state) => state !== undefined);
    // All the while the Lamp is away the answer waits for it: queued, never failed or given up.
    await until(
      "the Lamp away for the whole outage",
      playbackState,
      (state) => {
        expect(state).toBe("queued");
        return Date.now() - droppedAt >= OUTAGE_MS;
      },
      OUTAGE_MS + 30_000,
    );
    const back = await device(deviceId);
    const replay = await back.lamp.updatesSince(lastUpdateId(lamp));
    expect(replay).toMatchObject({ type: "run.updates_since_result", truncated: false });
    const [answer] = await back.lamp.waitForUtterances(1, 60_000);
    await probe.settled();
    expect(answer).toMatchObject({ resultId: run.resultId, voiceTargetId: "target-1" });
    expect(back.lamp.utterances).toHaveLength(1);
    expect(lamp.utterances).toHaveLength(0);
    expect((await probe.result(run.resultId ?? ""))?.playback).toMatchObject({ state: "played" });
    expect(updatesOf(back.lamp, a.runId).filter((update) => update.change === "resolved")).toMatchObject([
      { state: "resolved", outcome: "completed", resultId: run.resultId },
    ]);
  }, 240_000);

  it("the Lamp is offline past its target's expiry: the answer is suppressed (expired) and the Lamp is told on reconnect", async ({
    expect,
  }) => {
    const deviceId = "lamp-end-expired";
    const { lamp, probe } = await device(deviceId);
    const expiresAt = new Date(Date.now() + 8_000).toISOString();
    const a = await say(lamp, deviceId, AGENTS.expired, "Answer before I leave.", { expiresAt });
    lamp.drop();
    const run = await probe.runUntil(a.runId, (view) => view.state === "resolved", 60_000);
    await until(
      "the waiting answer suppressed when its target expired",
      async () => (await probe.result(run.resultId ?? ""))?.playback,
      (playback) => playback?.state === "suppressed",
      60_000,
    );
    const back = await device(deviceId);
    await back.lamp.updatesSince(lastUpdateId(lamp));
    const told = await back.lamp.waitForRunUpdate(
      a.runId,
      (update) => update.change === "suppressed",
      60_000,
    );
    await probe.settled();
    expect(told).toMatchObject({ state: "resolved", outcome: "completed", reason: "expired" });
    expect((await probe.result(run.resultId ?? ""))?.playback).toMatchObject({
      state: "suppressed",
      reason: "expired",
    });
    expect([...lamp.utterances, ...back.lamp.utterances]).toHaveLength(0);
  }, 120_000);

  it("say that again: a mixed-destination answer is refused; a repeat speaks to the device's current voice target", async ({
    expect,
  }) => {
    const mixedDevice = "lamp-end-repeat-mixed";
    const mixed = await device(mixedDevice);
    await say(mixed.lamp, mixedDevice, AGENTS.mixed, "Kitchen asks.", { voiceTargetId: "kitchen" });
    const b = await say(mixed.lamp, mixedDevice, AGENTS.mixed, "Desk asks.", { voiceTargetId: "desk" });
    const group = await mixed.probe.runUntil(b.runId, (run) => run.state === "resolved", 60_000);
    await mixed.probe.settled();
    expect((await mixed.probe.result(group.resultId ?? ""))?.playback).toMatchObject({
      reason: "mixed_destinations",
    });
    expect(await mixed.lamp.repeat(group.resultId ?? "")).toMatchObject({
      type: "playback.repeat_result",
      error: { code: "NOT_REPEATABLE" },
    });
    await mixed.probe.settled();
    expect(mixed.lamp.utterances).toHaveLength(0);

    const deviceId = "lamp-end-repeat";
    const { lamp, probe } = await device(deviceId);
    await say(lamp, deviceId, AGENTS.repeat, "First, in the kitchen.", { voiceTargetId: "kitchen" });
    const [first] = await lamp.waitForUtterances(1, 60_000);
    await say(lamp, deviceId, AGENTS.repeat, "Then, at the desk.", { voiceTargetId: "desk" });
    await lamp.waitForUtterances(2, 60_000);
    const resultId = first?.resultId ?? "";
    await lamp.repeat(resultId);
    await until(
      "the repeat spoken",
      async () => utterancesOf(lamp, resultId),
      (spoken) => spoken.length === 2,
    );
    await lamp.repeat(resultId, "hall");
    await until(
      "the repeat to a named target spoken",
      async () => utterancesOf(lamp, resultId),
      (spoken) => spoken.length === 3,
    );
    await probe.settled();
    expect(utterancesOf(lamp, resultId).map((utterance) => utterance.voiceTargetId)).toEqual([
      "kitchen",
      "desk",
      "hall",
    ]);
  });

  it("an input queued behind the running task: the run's input says so and the Lamp is told before the answer", async ({
    expect,
  }) => {
    const deviceId = "lamp-end-queued";
    const { lamp, probe } = await device(deviceId);
    await say(lamp, deviceId, AGENTS.queued, "First task.");
    const b = await say(lamp, deviceId, AGENTS.queued, "Second, while the first runs.");
    const queued = await lamp.waitForRunUpdate(
      b.runId,
      (update) => update.input?.mode === "native_queue",
      60_000,
    );
    expect(queued).toMatchObject({ change: "receipt", state: "pending" });
    await lamp.waitForUtterances(2, 60_000);
    await probe.settled();
    expect((await probe.run(b.runId)).input).toMatchObject({ mode: "native_queue" });
    const changes = updatesOf(lamp, b.runId).map((update) => update.change);
    expect(changes.indexOf("receipt")).toBeLessThan(changes.indexOf("resolved"));
  });
});

describe("run.update ownership", () => {
  it("no device was ever told about another device's run", ({ expect }) => {
    expect(lampsOf.size).toBeGreaterThan(5);
    let told = 0;
    for (const [deviceId, lamps] of lampsOf) {
      const own = runsOf.get(deviceId) ?? new Set<string>();
      for (const lamp of lamps) {
        const updates: RunUpdateFrame[] = lamp.runUpdates;
        told += updates.length;
        for (const update of updates)
          expect(own.has(update.runId), `${deviceId}: ${update.runId}`).toBe(true);
      }
    }
    expect(told).toBeGreaterThan(lampsOf.size);
  });
});
