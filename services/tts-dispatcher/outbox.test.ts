import { afterAll, afterEach, beforeAll, describe, expect, it } from "vitest";
import type { HostedServices } from "../../libs/service/service-host.js";
import { answerPlaybackId } from "./playback/playback-ids.js";
import { CODE_BLOCK_SPEECH } from "./speech/render-speech.js";
import { createTestRedis, waitFor, type TestRedis } from "../../test/helpers/test-redis.js";
import { OsStoreFixture, StreamLamp } from "../../test/tts/os-store-fixture.js";
import { startTtsDispatcher } from "../../test/tts/tts-service.js";

let t: TestRedis;
let os: OsStoreFixture;
let service: HostedServices;
let lamp: StreamLamp | undefined;
let deviceSeq = 0;

beforeAll(async () => {
  t = createTestRedis("tts-outbox");
  os = new OsStoreFixture(t.redis, t.keys);
  service = await startTtsDispatcher(t, { FAILURE_NOTICE_TEXT: "Sorry, that did not work." });
});
afterAll(async () => {
  await service.stop();
  await t.cleanup();
});
afterEach(() => lamp?.stop());

const newDevice = () => `lamp-${++deviceSeq}`;
const settled = (deviceId: string, resultKey: string, state = "suppressed") =>
  waitFor(
    () => os.outbox(deviceId, resultKey),
    (entry) => entry?.state === state,
  );
/** Played and finished: the stand-in Lamp acks started, then finished. */
const spoken = (deviceId: string, resultKey: string) =>
  waitFor(
    () => os.outbox(deviceId, resultKey),
    (entry) => entry?.state === "played" && entry.lastAck === "finished",
  );

describe("tts-dispatcher outbox", () => {
  it("creates one outbox entry and one playback for a group result, and speaks it once", async () => {
    const deviceId = newDevice();
    await os.setPresence(deviceId);
    lamp = new StreamLamp(os).start();
    await os.seedRun(deviceId, { runId: "run-a", createdAt: 1 });
    await os.seedRun(deviceId, { runId: "run-b", createdAt: 2 });
    const fullText = "# Done\nFinished: **two** red planes.\n\n```\ncode\n```";
    const resultKey = await os.seedResolvedResult(deviceId, {
      resultId: "group-1",
      runIds: ["run-a", "run-b"],
      fullText,
    });

    const entry = await spoken(deviceId, resultKey);
    expect(entry).toMatchObject({
      state: "played",
      lastAck: "finished",
      voiceTargetId: "target-1",
      speechText: `Done. Finished: two red planes. ${CODE_BLOCK_SPEECH}`,
      playbackId: answerPlaybackId({
        deviceId,
        serverInstanceId: "originating-instance",
        resultId: "group-1",
      }),
    });
    expect(entry?.queuedAt).toBeLessThanOrEqual(entry?.sendingAt ?? 0);
    expect(entry?.sendingAt).toBeLessThanOrEqual(entry?.playedAt ?? 0);
    expect(await t.redis.hget(os.device(deviceId).result(resultKey), "fullText")).toBe(fullText);
    expect(await os.outboxKeys(deviceId)).toHaveLength(1);
    expect((await os.deliveries()).filter((delivery) => delivery.deviceId === deviceId)).toHaveLength(1);
    expect(lamp.received.filter((delivery) => delivery.deviceId === deviceId).map((d) => d.frame)).toEqual([
      {
        type: "playback.start",
        playbackId: entry?.playbackId,
        resultId: "group-1",
        voiceTargetId: "target-1",
        text: entry?.speechText,
      },
    ]);
  });

  it("adds nothing when the same os.resolved is delivered again", async () => {
    const deviceId = newDevice();
    await os.setPresence(deviceId);
    lamp = new StreamLamp(os).start();
    await os.seedRun(deviceId, { runId: "run-a", createdAt: 1 });
    const resultKey = await os.seedResolvedResult(deviceId, { resultId: "r-1", runIds: ["run-a"] });
    const first = await spoken(deviceId, resultKey);
    const jobsBefore = await os.playbackJobIds();

    await os.publishResolved(deviceId, "originating-instance", "r-1");
    await os.publishResolved(deviceId, "originating-instance", "r-1");
    expect(await waitFor(() => os.dispatcherIdle(), Boolean)).toBe(true);
    expect(await os.outbox(deviceId, resultKey)).toEqual(first);
    expect(await os.outboxKeys(deviceId)).toHaveLength(1);
    expect(await os.playbackKeys(deviceId)).toHaveLength(1);
    expect(await os.playbackJobIds()).toEqual(jobsBefore);
    expect((await os.deliveries()).filter((delivery) => delivery.deviceId === deviceId)).toHaveLength(1);
  });

  const suppressionCases = [
    {
      name: "suppresses a result whose newest member's voice target expired, with reason expired",
      runs: [
        { runId: "a", createdAt: 1 },
        { runId: "b", createdAt: 2, voiceTargetExpiresAt: Date.now() - 1 },
      ],
      reason: "expired",
    },
    {
      name: "suppresses a result whose newest member's route is display, with reason not_voice_route",
      runs: [
        { runId: "a", createdAt: 1 },
        { runId: "b", createdAt: 2, replyRoute: "display" as const },
      ],
      reason: "not_voice_route",
    },
    {
      name: "suppresses a result whose newest member was cancelled, with reason cancelled",
      runs: [
        { runId: "a", createdAt: 1 },
        { runId: "b", createdAt: 2, cancelledAt: Date.now() },
      ],
      reason: "cancelled",
    },
    {
      name: "suppresses a group spanning distinct voice targets, with reason mixed_destinations",
      runs: [
        { runId: "a", createdAt: 1, voiceTargetId: "kitchen" },
        { runId: "b", createdAt: 2, voiceTargetId: "desk" },
      ],
      reason: "mixed_destinations",
    },
    {
      name: "says nothing for a failed result whose newest member was cancelled: no answer, no notice",
      runs: [
        { runId: "a", createdAt: 1 },
        { runId: "b", createdAt: 2, cancelledAt: Date.now() },
      ],
      outcome: "failed" as const,
      reason: "failed_result",
    },
    {
      name: "suppresses a cancelled result, with reason cancelled_result",
      runs: [{ runId: "a", createdAt: 1 }],
      outcome: "cancelled" as const,
      reason: "cancelled_result",
    },
  ];

  for (const scenario of suppressionCases)
    it(scenario.name, async () => {
      const deviceId = newDevice();
      await os.setPresence(deviceId);
      for (const run of scenario.runs) await os.seedRun(deviceId, run);
      const resultKey = await os.seedResolvedResult(deviceId, {
        resultId: "r-suppressed",
        runIds: scenario.runs.map((run) => run.runId),
        outcome: scenario.outcome,
        fullText: "An answer that **must** stay retrievable.",
      });
      const entry = await settled(deviceId, resultKey);
      expect(entry).toMatchObject({
        state: "suppressed",
        reason: scenario.reason,
        speechText: "An answer that must stay retrievable.",
      });
      expect(entry?.playbackId).toBeUndefined();
      expect(entry?.suppressedAt).toBeGreaterThan(0);
      expect(await os.playbackKeys(deviceId)).toEqual([]);
      expect(await t.redis.hget(os.device(deviceId).result(resultKey), "fullText")).toBe(
        "An answer that **must** stay retrievable.",
      );
      // Every member run is told, not only the newest.
      expect(await os.runUpdates(deviceId)).toEqual(
        scenario.runs.map((run) =>
          expect.objectContaining({ runId: run.runId, change: "suppressed", reason: scenario.reason }),
        ),
      );
    });

  it("still speaks when only an older member was cancelled", async () => {
    const deviceId = newDevice();
    await os.setPresence(deviceId);
    lamp = new StreamLamp(os).start();
    await os.seedRun(deviceId, { runId: "a", createdAt: 1, cancelledAt: Date.now() });
    await os.seedRun(deviceId, { runId: "b", createdAt: 2 });
    const resultKey = await os.seedResolvedResult(deviceId, {
      resultId: "r-older-cancel",
      runIds: ["a", "b"],
    });
    const entry = await spoken(deviceId, resultKey);
    expect(entry).toMatchObject({ state: "played" });
    expect(entry?.reason).toBeUndefined();
  });

  it("never speaks a failed result as an answer and sends the configured failure notice as its own playback", async () => {
    const deviceId = newDevice();
    await os.setPresence(deviceId);
    lamp = new StreamLamp(os).start();
    await os.seedRun(deviceId, { runId: "a", createdAt: 1 });
    const resultKey = await os.seedResolvedResult(deviceId, {
      resultId: "r-failed",
      runIds: ["a"],
      outcome: "failed",
      fullText: "Error: the build broke.",
    });
    const entry = await settled(deviceId, resultKey);
    expect(entry).toMatchObject({ state: "suppressed", reason: "failed_result" });
    expect(entry?.playbackId).toBeUndefined();
    const noticeId = entry?.noticePlaybackId as string;
    const notice = await waitFor(
      () => os.playback(deviceId, noticeId),
      (playback) => playback?.state === "played",
    );
    expect(notice).toMatchObject({ kind: "notice", state: "played", text: "Sorry, that did not work." });
    const spoken = (await os.deliveries()).filter((delivery) => delivery.deviceId === deviceId);
    expect(spoken.map((delivery) => delivery.frame.text)).toEqual(["Sorry, that did not work."]);
    expect(await os.runUpdates(deviceId)).toEqual([
      expect.objectContaining({ runId: "a", change: "suppressed", reason: "failed_result" }),
    ]);
  });

  it("gives a failure notice the answer's rules: an unacked notice ends uncertain and is never sent again", async () => {
    const deviceId = newDevice();
    await os.setPresence(deviceId);
    lamp = new StreamLamp(os, "silent").start();
    await os.seedRun(deviceId, { runId: "a", createdAt: 1 });
    const resultKey = await os.seedResolvedResult(deviceId, {
      resultId: "r-failed-unacked-notice",
      runIds: ["a"],
      outcome: "failed",
    });
    const noticeId = String((await settled(deviceId, resultKey))?.noticePlaybackId);
    expect(
      await waitFor(
        () => os.playback(deviceId, noticeId),
        (playback) => playback?.state === "uncertain",
      ),
    ).toMatchObject({ kind: "notice", state: "uncertain", reason: "ack_timeout" });
    await os.publishResolved(deviceId, "originating-instance", "r-failed-unacked-notice");
    expect(await waitFor(() => os.dispatcherIdle(), Boolean)).toBe(true);
    expect((await os.deliveries()).filter((delivery) => delivery.deviceId === deviceId)).toHaveLength(1);
    expect(await os.runUpdates(deviceId)).toEqual([
      expect.objectContaining({ change: "suppressed", reason: "failed_result" }),
      expect.objectContaining({ change: "playback", reason: "ack_timeout", playbackId: noticeId }),
    ]);
  });
});
