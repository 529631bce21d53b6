import { OsDeviceKeys } from "../../../libs/os-store/os-keys.js";
import { randomUUID } from "node:crypto";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { E2EStack, MACHINE, type ServiceName } from "../stack.js";
import type { TestLamp } from "../test-lamp.js";
import {
  DeviceProbe,
  engineDeliveries,
  metricValue,
  until,
  utterancesOf,
  type RunView,
} from "./acceptance-kit.js";
import { harnessEventLog, harnessInstance, reappendHarnessEvents } from "./harness-forgery.js";

/**
 * Seed 000 "Joint acceptance tests before enablement", line 5: duplicate/reordered events, lost acknowledgment,
 * reconnect and restart. Every service is SIGKILLed and restarted while an answer is in flight, the Harness
 * transport instance changes, the Harness log is duplicated and reordered, and the Lamp loses its acks; each
 * engine must receive each input once and each result must be enqueued for speech once.
 */
const CLAUDE = "claude-slow";
const CODEX = "codex-slow";
const FAST = "claude-fast";

let stack: E2EStack;
beforeAll(async () => {
  stack = await E2EStack.start({
    label: "accept-faults",
    // Two stacks boot at once on a small, busy machine: give each service more than the default minute.
    startTimeoutMs: 180_000,
    // advanceRuntimes false: every engine process a restarted runner spawns plays the same answering script.
    agents: [
      {
        agentId: CLAUDE,
        protocol: "claude-stream-json",
        scenario: "e2e-claude-slow-answer",
        advanceRuntimes: false,
      },
      {
        agentId: CODEX,
        protocol: "codex-app-server",
        scenario: "e2e-codex-slow-answer",
        advanceRuntimes: false,
      },
      {
        agentId: FAST,
        protocol: "claude-stream-json",
        scenario: "claude-answer-each-input",
        advanceRuntimes: false,
      },
    ],
  });
}, 300_000);
afterAll(() => stack?.stop());

async function device(deviceId: string, ack = true): Promise<{ lamp: TestLamp; probe: DeviceProbe }> {
  return { lamp: await stack.lamp(deviceId, { ack }), probe: new DeviceProbe(stack, deviceId) };
}

/** One voice request to each engine (Claude and Codex), both slow enough to still be running afterwards. */
async function askBoth(lamp: TestLamp, text: string): Promise<{ runId: string }[]> {
  return Promise.all([
    lamp.say({ agentId: CLAUDE, machineId: MACHINE, text: `${text} (claude)` }),
    lamp.say({ agentId: CODEX, machineId: MACHINE, text: `${text} (codex)` }),
  ]);
}

/** Waits until each run's input was written to its engine (the answer is now being worked on). */
async function untilWrittenToEngines(probe: DeviceProbe, runs: { runId: string }[]): Promise<RunView[]> {
  const views = await Promise.all(
    runs.map((run) => probe.runUntil(run.runId, (view) => view.deliveryId !== null)),
  );
  await until(
    "inputs written to the engines",
    async () => [...engineDeliveries(stack, CLAUDE), ...engineDeliveries(stack, CODEX)],
    (written) => views.every((view) => written.includes(view.deliveryId ?? "")),
  );
  return views;
}

const countOf = (list: string[], value: string | null) => list.filter((entry) => entry === value).length;

/** Each run resolved completed by its own result, spoken exactly once, and its input written exactly once. */
async function expectEachAnsweredOnce(
  probe: DeviceProbe,
  lamp: TestLamp,
  runs: { runId: string }[],
): Promise<void> {
  await lamp.waitForUtterances(runs.length, 60_000);
  await probe.settled();
  const written = [...engineDeliveries(stack, CLAUDE), ...engineDeliveries(stack, CODEX)];
  const resultIds = new Set<string>();
  for (const { runId } of runs) {
    const run = await probe.run(runId);
    expect(run).toMatchObject({ state: "resolved", outcome: "completed", receiptState: "completed" });
    expect(countOf(written, run.deliveryId)).toBe(1);
    expect(utterancesOf(lamp, run.resultId ?? "")).toHaveLength(1);
    expect((await probe.result(run.resultId ?? ""))?.playback).toMatchObject({ state: "played" });
    resultIds.add(run.resultId ?? "");
  }
  expect(resultIds.size).toBe(runs.length);
  expect(lamp.utterances).toHaveLength(runs.length);
  expect(await probe.protocolErrors()).toEqual([]);
  expect(await probe.rejections()).toEqual([]);
}

describe(
  "Duplicate/reordered events, lost acknowledgment, reconnect, and restart: no duplicate input or TTS enqueue; changed instance is reconciled explicitly",
  { timeout: 150_000 },
  () => {
    const downstream: ServiceName[] = [
      "evidence-extractor",
      "result-producer",
      "harness-gateway",
      "router",
      "run-resolver",
      "tts-dispatcher",
    ];
    it.each(downstream)(
      "%s SIGKILLed and restarted while two answers (Claude, Codex) are in flight: each input written once, each result spoken once",
      async (service) => {
        const { lamp, probe } = await device(`lamp-l5-${service}`);
        const runs = await askBoth(lamp, `While ${service} restarts`);
        await untilWrittenToEngines(probe, runs);
        await stack.kill(service);
        await stack.restart(service);
        await expectEachAnsweredOnce(probe, lamp, runs);
      },
    );

    it("engine-runner SIGKILLed before it read the dispatched inputs: the restarted runner writes each exactly once", async () => {
      const { lamp, probe } = await device("lamp-l5-runner-before");
      await stack.kill("engine-runner");
      const runs = await askBoth(lamp, "Dispatched while the runner is down");
      await stack.restart("engine-runner");
      await expectEachAnsweredOnce(probe, lamp, runs);
    });

    it("engine-runner SIGKILLed after writing the inputs (the engines die mid-turn): receipts and runs end unknown, nothing resent or spoken; later inputs are answered once", async () => {
      const { lamp, probe } = await device("lamp-l5-runner-after");
      const lost = await askBoth(lamp, "Lost with the engine");
      await untilWrittenToEngines(probe, lost);
      await stack.kill("engine-runner");
      await stack.restart("engine-runner");
      for (const { runId } of lost) await probe.runUntil(runId, (run) => run.receiptState === "unknown");
      await probe.settled();
      const written = [...engineDeliveries(stack, CLAUDE), ...engineDeliveries(stack, CODEX)];
      for (const { runId } of lost) {
        const run = await probe.run(runId);
        expect(run).toMatchObject({
          state: "unknown",
          reason: "ENGINE_EXITED",
          outcome: null,
          resultId: null,
        });
        expect((await probe.receipt(runId))?.error?.code).toBe("ENGINE_EXITED");
        expect(countOf(written, run.deliveryId)).toBe(1);
      }
      expect(lamp.utterances).toHaveLength(0);

      const later = await askBoth(lamp, "After the runner restarted");
      await lamp.waitForUtterances(2, 60_000);
      await probe.settled();
      expect(lamp.utterances).toHaveLength(2);
      for (const { runId } of later) expect(await probe.run(runId)).toMatchObject({ state: "resolved" });
      for (const { runId } of lost) expect(await probe.run(runId)).toMatchObject({ state: "unknown" });
    });

    it("device-gateway SIGKILLed while a playback is unacknowledged (lost ack): the entry becomes uncertain and is never sent again; only an explicit repeat speaks again", async () => {
      const deviceId = "lamp-l5-lost-ack";
      const { lamp: deaf, probe } = await device(deviceId, false);
      const asked = await deaf.say({ agentId: FAST, machineId: MACHINE, text: "Answer without an ack." });
      const [heard] = await deaf.waitForUtterances(1, 60_000);
      await stack.kill("device-gateway");
      await stack.restart("device-gateway");
      const { lamp } = await device(deviceId);
      const resultId = heard?.resultId ?? "";
      await probe.resultUntil(resultId, (result) => result.playback?.state === "uncertain");
      await probe.settled();
      expect((await probe.result(resultId))?.playback).toMatchObject({
        state: "uncertain",
        reason: "ack_timeout",
      });
      expect(await probe.run(asked.runId)).toMatchObject({ state: "resolved", resultId });
      expect(deaf.utterances).toHaveLength(1);
      expect(lamp.utterances).toHaveLength(0);

      await lamp.repeat(resultId);
      const [again] = await lamp.waitForUtterances(1, 30_000);
      await probe.settled();
      expect(again).toMatchObject({ resultId });
      expect(again?.playbackId).not.toBe(heard?.playbackId);
      expect(lamp.utterances).toHaveLength(1);
      expect(deaf.utterances).toHaveLength(1);
    });

    it("a voice.request resent after its voice.request_result was lost is the same run: one input, one answer", async () => {
      const { lamp, probe } = await device("lamp-l5-resend");
      const requestId = randomUUID();
      const request = { agentId: FAST, machineId: MACHINE, text: "Only once, please.", requestId };
      const first = await lamp.say(request);
      const second = await lamp.say(request);
      expect(second).toEqual(first);
      await lamp.waitForUtterances(1, 60_000);
      await probe.settled();
      const run = await probe.run(first.runId);
      expect(countOf(engineDeliveries(stack, FAST), run.deliveryId)).toBe(1);
      expect(lamp.utterances).toHaveLength(1);
    });

    it("duplicated and reordered Harness events (result, stale receipt, turn.done re-sent after the fact) change nothing and speak nothing", async () => {
      const deviceId = "lamp-l5-dupes";
      const { lamp, probe } = await device(deviceId);
      const asked = await lamp.say({ agentId: FAST, machineId: MACHINE, text: "Answer once." });
      await lamp.waitForUtterances(1, 60_000);
      await probe.settled();
      const before = await probe.run(asked.runId);
      const log = await harnessEventLog(stack, deviceId);
      const pick = (kind: string) => log.find((event) => event.kind === kind)?.eventId ?? 0;
      const copied = await reappendHarnessEvents(stack, deviceId, [
        pick("turn.done"),
        pick("result"),
        pick("receipt.updated"),
        pick("turn.started"),
        pick("result"),
      ]);
      expect(copied).toEqual(["turn.done", "result", "receipt.updated", "turn.started", "result"]);
      await probe.settled();
      expect(await probe.run(asked.runId)).toEqual(before);
      expect((await probe.result(before.resultId ?? ""))?.playback).toMatchObject({ state: "played" });
      expect(await probe.protocolErrors()).toEqual([]);
      expect(await probe.rejections()).toEqual([]);
      expect(lamp.utterances).toHaveLength(1);
    });

    it("the Harness transport instance changes: the router is resynced, retained results replay without a second utterance, nothing is resubmitted, new inputs bind to the new instance", async () => {
      const deviceId = "lamp-l5-instance";
      const { lamp, probe } = await device(deviceId);
      const first = await lamp.say({ agentId: FAST, machineId: MACHINE, text: "Before the change." });
      await lamp.waitForUtterances(1, 60_000);
      await probe.settled();
      const oldInstance = await harnessInstance(stack);
      const before = await probe.run(first.runId);

      await stack.redis.del(stack.keys.key("h", "instance"));
      await stack.restart("harness-gateway");
      const cursorKey = new OsDeviceKeys(stack.keys, deviceId).cursor;
      const newInstance = await until(
        "router resumed on the new instance",
        async () => (await stack.redis.hget(cursorKey, "serverInstanceId")) ?? "",
        (instance) => instance !== "" && instance !== oldInstance,
      );
      await probe.settled();
      expect(
        await metricValue(stack, "harness-gateway", "harness_gateway_events_sent_total", { kind: "resync" }),
      ).toBeGreaterThan(0);
      expect(
        await metricValue(stack, "harness-gateway", "harness_gateway_reservations_total", {
          status: "accepted",
        }),
      ).toBe(0);
      expect(await probe.run(first.runId)).toEqual(before);
      expect(before.serverInstanceId).toBe(oldInstance);
      expect(lamp.utterances).toHaveLength(1);
      expect(await probe.protocolErrors()).toEqual([]);
      expect(await probe.rejections()).toEqual([]);

      const second = await lamp.say({ agentId: FAST, machineId: MACHINE, text: "After the change." });
      await lamp.waitForUtterances(2, 60_000);
      await probe.settled();
      const after = await probe.run(second.runId);
      expect(after).toMatchObject({ state: "resolved", serverInstanceId: newInstance });
      expect(lamp.utterances).toHaveLength(2);
      const written = engineDeliveries(stack, FAST);
      expect([countOf(written, before.deliveryId), countOf(written, after.deliveryId)]).toEqual([1, 1]);
    });
  },
);
