import { Job, Queue } from "bullmq";
import { afterAll, afterEach, beforeAll, describe, expect, it } from "vitest";
import { QUEUE_CATALOG } from "../../libs/contract/catalog.js";
import type { HostedServices } from "../../libs/service/service-host.js";
import { playbackJobId } from "./playback/playback-ids.js";
import { PlaybackQueue } from "./playback/playback-queue.js";
import { createTestRedis, waitFor, type TestRedis } from "../../test/helpers/test-redis.js";
import { OsStoreFixture, StreamLamp } from "../../test/tts/os-store-fixture.js";
import { startTtsDispatcher } from "../../test/tts/tts-service.js";
import { sampleValue } from "../../test/helpers/metrics-text.js";

let t: TestRedis;
let os: OsStoreFixture;
let service: HostedServices | undefined;
let lamp: StreamLamp | undefined;
let deviceSeq = 0;
/** Read-only handle on the worker's queue, to see how often a job was attempted. */
let jobs: Queue;

beforeAll(async () => {
  t = createTestRedis("tts-playback");
  os = new OsStoreFixture(t.redis, t.keys);
  service = await startTtsDispatcher(t);
  jobs = new Queue(QUEUE_CATALOG.lampPlayback.name, {
    connection: { url: t.url },
    prefix: t.keys.bullPrefix,
  });
});
afterAll(async () => {
  await jobs.close();
  await service?.stop();
  await t.cleanup();
});
afterEach(() => lamp?.stop());

const newDevice = () => `lamp-p${++deviceSeq}`;
const outboxIn = (deviceId: string, resultKey: string, ...states: string[]) =>
  waitFor(
    () => os.outbox(deviceId, resultKey),
    (entry) => states.includes(entry?.state ?? ""),
  );
const startsFor = async (deviceId: string) =>
  (await os.deliveries()).filter((delivery) => delivery.deviceId === deviceId);
const attemptsMade = async (jobId: string) => (await Job.fromId(jobs, jobId))?.attemptsMade ?? 0;
/** The playback's job is delayed, waiting for the Lamp, and indexed as such for the device. */
const waitingForLamp = (deviceId: string, playbackId: string) =>
  waitFor(
    async () =>
      (await os.awaitingLamp(deviceId)).includes(playbackId) &&
      (await Job.fromId(jobs, playbackJobId(deviceId, playbackId)))?.isDelayed(),
    Boolean,
  );
const metricsText = async () => (await fetch(`${service?.url}/metrics`)).text();

async function resolvedFor(
  deviceId: string,
  resultId: string,
  run: Parameters<OsStoreFixture["seedRun"]>[1],
) {
  await os.seedRun(deviceId, run);
  return os.seedResolvedResult(deviceId, { resultId, runIds: [run.runId] });
}

describe("lamp-playback worker", () => {
  it("marks the entry played on the Lamp's started ack and keeps the later finished ack", async () => {
    const deviceId = newDevice();
    await os.setPresence(deviceId);
    const resultKey = await resolvedFor(deviceId, "r-ack", { runId: "a", createdAt: 1 });
    const [start] = await waitFor(
      () => startsFor(deviceId),
      (starts) => starts.length === 1,
    );
    const playbackId = start?.frame.playbackId as string;
    expect(await os.outbox(deviceId, resultKey)).toMatchObject({ state: "sending" });

    await os.ack(deviceId, playbackId, "started");
    expect(await outboxIn(deviceId, resultKey, "played")).toMatchObject({
      state: "played",
      lastAck: "started",
    });
    await os.ack(deviceId, playbackId, "finished");
    await os.ack(deviceId, playbackId, "started");
    const entry = await waitFor(
      () => os.outbox(deviceId, resultKey),
      (value) => value?.lastAck === "finished",
    );
    expect(entry).toMatchObject({ state: "played", lastAck: "finished" });
    expect(await os.playback(deviceId, playbackId)).toMatchObject({
      kind: "answer",
      state: "played",
      lastAck: "finished",
    });
  });

  it("marks the entry failed with lamp_rejected when the Lamp rejects the playback", async () => {
    const deviceId = newDevice();
    await os.setPresence(deviceId);
    lamp = new StreamLamp(os, "reject").start();
    const resultKey = await resolvedFor(deviceId, "r-reject", { runId: "a", createdAt: 1 });
    const entry = await outboxIn(deviceId, resultKey, "failed");
    expect(entry).toMatchObject({ state: "failed", reason: "lamp_rejected", lastAck: "rejected" });
    expect(await os.runUpdates(deviceId)).toEqual([
      expect.objectContaining({ change: "playback", reason: "lamp_rejected", playbackId: entry?.playbackId }),
    ]);
  });

  it("leaves a playback uncertain when its ack is lost and never sends it again, even after a restart", async () => {
    const deviceId = newDevice();
    await os.setPresence(deviceId);
    lamp = new StreamLamp(os, "silent").start();
    const resultKey = await resolvedFor(deviceId, "r-lost-ack", { runId: "a", createdAt: 1 });
    const entry = await outboxIn(deviceId, resultKey, "uncertain");
    expect(entry).toMatchObject({ state: "uncertain", reason: "ack_timeout" });
    expect(entry?.uncertainAt).toBeGreaterThanOrEqual(entry?.sendingAt ?? Infinity);
    expect(await os.runUpdates(deviceId)).toEqual([
      expect.objectContaining({
        runId: "a",
        change: "playback",
        reason: "ack_timeout",
        playbackId: entry?.playbackId,
      }),
    ]);

    await service?.stop();
    service = await startTtsDispatcher(t);
    await os.publishResolved(deviceId, "originating-instance", "r-lost-ack");
    expect(await waitFor(() => os.dispatcherIdle(), Boolean)).toBe(true);
    expect(await startsFor(deviceId)).toHaveLength(1);
    expect(await os.outbox(deviceId, resultKey)).toMatchObject({ state: "uncertain", reason: "ack_timeout" });
  });

  it("records a late started ack of an uncertain playback as played without sending again", async () => {
    const deviceId = newDevice();
    await os.setPresence(deviceId);
    const resultKey = await resolvedFor(deviceId, "r-late-ack", { runId: "a", createdAt: 1 });
    const entry = await outboxIn(deviceId, resultKey, "uncertain");
    await os.ack(deviceId, entry?.playbackId as string, "started");
    expect(await outboxIn(deviceId, resultKey, "played")).toMatchObject({
      state: "played",
      lastAck: "started",
    });
    expect(await startsFor(deviceId)).toHaveLength(1);
  });

  it("waits while no Lamp is connected, spending no attempt, and is spoken once on lamp.connected, long before a re-check", async () => {
    const deviceId = newDevice();
    lamp = new StreamLamp(os).start();
    const resultKey = await resolvedFor(deviceId, "r-offline-then-online", { runId: "a", createdAt: 1 });
    const playbackId = String((await outboxIn(deviceId, resultKey, "queued"))?.playbackId);
    expect(await waitingForLamp(deviceId, playbackId)).toBe(true);
    expect(await attemptsMade(playbackJobId(deviceId, playbackId))).toBe(0);

    // The service re-checks only every 30 s (the default): being spoken well before that is the reconnect's doing
    // (the promoted-wake count below says so too; the margin is for a loaded machine, not a latency goal).
    const connectedAt = Date.now();
    await os.lampConnected(deviceId);
    const entry = await waitFor(
      () => os.outbox(deviceId, resultKey),
      (value) => value?.state === "played",
      { timeoutMs: 20_000 },
    );
    expect(entry).toMatchObject({ state: "played" });
    expect((entry?.sendingAt ?? Infinity) - connectedAt).toBeLessThan(20_000);
    expect(await startsFor(deviceId)).toHaveLength(1);
    expect(await os.awaitingLamp(deviceId)).toEqual([]);
    expect(
      sampleValue(await metricsText(), "tts_playback_lamp_wakes_total", { outcome: "promoted" }),
    ).toBeGreaterThan(0);
  });

  it("never sends into the stream of a gateway without heartbeat (SIGKILLed, presence left behind)", async () => {
    const deviceId = newDevice();
    lamp = new StreamLamp(os).start();
    await os.setPresence(deviceId, "gw-killed", { alive: false });
    const resultKey = await resolvedFor(deviceId, "r-dead-gateway", { runId: "a", createdAt: 1 });
    const playbackId = String((await outboxIn(deviceId, resultKey, "queued"))?.playbackId);
    // A dead holder counts as no Lamp: the playback waits, its attempts untouched, for the Lamp to be back.
    expect(await waitingForLamp(deviceId, playbackId)).toBe(true);
    expect(await attemptsMade(playbackJobId(deviceId, playbackId))).toBe(0);
    expect(await os.outbox(deviceId, resultKey)).toMatchObject({ state: "queued" });
    expect(await os.deliveries("gw-killed")).toEqual([]);

    await os.lampConnected(deviceId); // the Lamp reconnected to a live gateway
    expect(await outboxIn(deviceId, resultKey, "played")).toMatchObject({ state: "played" });
    expect(await startsFor(deviceId)).toHaveLength(1);
  });

  it("waits for the Lamp only until the voice target expires, then suppresses it expired and tells its run", async () => {
    const deviceId = newDevice();
    const resultKey = await resolvedFor(deviceId, "r-expires-while-offline", {
      runId: "a",
      createdAt: 1,
      // Long enough for the claim to find the target valid on a loaded machine, short enough to wait out.
      voiceTargetExpiresAt: Date.now() + 3_000,
    });
    const playbackId = String((await outboxIn(deviceId, resultKey, "queued"))?.playbackId);
    expect(await waitingForLamp(deviceId, playbackId)).toBe(true);
    const entry = await outboxIn(deviceId, resultKey, "suppressed");
    expect(entry).toMatchObject({ state: "suppressed", reason: "expired" });
    expect(await startsFor(deviceId)).toHaveLength(0);
    expect(await os.awaitingLamp(deviceId)).toEqual([]);
    expect(await os.runUpdates(deviceId)).toEqual([
      expect.objectContaining({ runId: "a", change: "suppressed", reason: "expired", playbackId }),
    ]);
  });

  it("suppresses as cancelled when the newest run is cancelled while it waits for the Lamp", async () => {
    const deviceId = newDevice();
    const resultKey = await resolvedFor(deviceId, "r-cancel-while-offline", { runId: "a", createdAt: 1 });
    const playbackId = String((await outboxIn(deviceId, resultKey, "queued"))?.playbackId);
    expect(await waitingForLamp(deviceId, playbackId)).toBe(true);
    await t.redis.hset(os.device(deviceId).run("a"), "cancelledAt", String(Date.now()));
    await os.lampConnected(deviceId);
    expect(await outboxIn(deviceId, resultKey, "suppressed")).toMatchObject({ reason: "cancelled" });
    expect(await startsFor(deviceId)).toHaveLength(0);
    expect(await os.runUpdates(deviceId)).toEqual([
      expect.objectContaining({ runId: "a", change: "suppressed", reason: "cancelled", playbackId }),
    ]);
  });

  it("counts and ignores an ack for an unknown playback", async () => {
    const deviceId = newDevice();
    await os.ack(deviceId, "no-such-playback", "started");
    const text = await waitFor(metricsText, (body) => body.includes('reason="unknown_playback"'));
    expect(sampleValue(text, "tts_lamp_events_ignored_total", { reason: "unknown_playback" })).toBe(1);
    expect(await os.playbackKeys(deviceId)).toEqual([]);
  });

  it("speaks a result exactly once more on playback.repeat from its owner", async () => {
    const deviceId = newDevice();
    await os.setPresence(deviceId);
    lamp = new StreamLamp(os).start();
    const resultKey = await resolvedFor(deviceId, "r-repeat", { runId: "a", createdAt: 1 });
    const answer = await waitFor(
      () => os.outbox(deviceId, resultKey),
      (entry) => entry?.lastAck === "finished",
    );

    const repeatId = await os.requestRepeat(deviceId, "r-repeat");
    await os.requestRepeat(deviceId, "r-repeat", repeatId);
    const repeat = await waitFor(
      () => os.playback(deviceId, repeatId),
      (playback) => playback?.lastAck === "finished",
    );
    expect(repeat).toMatchObject({ kind: "repeat", state: "played", resultKey, text: answer?.speechText });
    expect(await waitFor(() => os.dispatcherIdle(), Boolean)).toBe(true);
    expect((await startsFor(deviceId)).map((start) => start.frame.playbackId)).toEqual([
      answer?.playbackId,
      repeatId,
    ]);
    expect(await os.outbox(deviceId, resultKey)).toEqual(answer);
  });

  it("ignores playback.repeat of a result owned by another device", async () => {
    const owner = newDevice();
    const stranger = newDevice();
    await os.setPresence(owner);
    await os.setPresence(stranger);
    lamp = new StreamLamp(os).start();
    const resultKey = await resolvedFor(owner, "r-owned", { runId: "a", createdAt: 1 });
    await outboxIn(owner, resultKey, "played");

    const repeatId = await os.requestRepeat(stranger, "r-owned");
    await waitFor(metricsText, (body) => body.includes('reason="repeat_unknown_result"'));
    expect(await os.playback(stranger, repeatId)).toBeUndefined();
    expect(await os.playback(owner, repeatId)).toBeUndefined();
    expect(await startsFor(stranger)).toHaveLength(0);
    expect(await startsFor(owner)).toHaveLength(1);
  });

  it("does not speak a failed result on playback.repeat either; only the default failure notice is spoken", async () => {
    const deviceId = newDevice();
    await os.setPresence(deviceId);
    lamp = new StreamLamp(os).start();
    await os.seedRun(deviceId, { runId: "a", createdAt: 1 });
    const resultKey = await os.seedResolvedResult(deviceId, {
      resultId: "r-failed-repeat",
      runIds: ["a"],
      outcome: "failed",
      fullText: "Error: the build broke.",
    });
    const noticeId = String((await outboxIn(deviceId, resultKey, "suppressed"))?.noticePlaybackId);
    await waitFor(
      () => os.playback(deviceId, noticeId),
      (playback) => playback?.state === "played",
    );
    const repeatId = await os.requestRepeat(deviceId, "r-failed-repeat");
    const repeat = await waitFor(
      () => os.playback(deviceId, repeatId),
      (playback) => playback !== undefined,
    );
    expect(repeat).toMatchObject({ kind: "repeat", state: "suppressed", reason: "failed_result" });
    expect(await waitFor(() => os.dispatcherIdle(), Boolean)).toBe(true);
    expect((await startsFor(deviceId)).map((start) => start.frame)).toEqual([
      expect.objectContaining({
        playbackId: noticeId,
        text: "That task failed. The details are on the screen.",
      }),
    ]);
  });

  const neverSpokenRepeats = [
    {
      name: "does not speak a repeat of a result that went to several voice targets (mixed_destinations)",
      runs: [
        { runId: "a", createdAt: 1, voiceTargetId: "kitchen" },
        { runId: "b", createdAt: 2, voiceTargetId: "desk" },
      ],
      reason: "mixed_destinations",
    },
    {
      name: "does not speak a repeat of a result whose reply went to the display (not_voice_route)",
      runs: [{ runId: "a", createdAt: 1, replyRoute: "display" as const }],
      reason: "not_voice_route",
    },
  ];
  for (const scenario of neverSpokenRepeats)
    it(scenario.name, async () => {
      const deviceId = newDevice();
      await os.setPresence(deviceId);
      for (const run of scenario.runs) await os.seedRun(deviceId, run);
      const resultKey = await os.seedResolvedResult(deviceId, {
        resultId: "r-not-for-voice",
        runIds: scenario.runs.map((run) => run.runId),
      });
      await outboxIn(deviceId, resultKey, "suppressed");
      const repeatId = await os.requestRepeat(deviceId, "r-not-for-voice", undefined, "kitchen");
      expect(await waitFor(() => os.dispatcherIdle(), Boolean)).toBe(true);
      expect(await os.playback(deviceId, repeatId)).toMatchObject({
        kind: "repeat",
        state: "suppressed",
        reason: scenario.reason,
      });
      expect(await startsFor(deviceId)).toHaveLength(0);
    });

  it("speaks a repeat to the voice target the Lamp names, else to that of the device's latest run", async () => {
    const deviceId = newDevice();
    await os.setPresence(deviceId);
    lamp = new StreamLamp(os).start();
    const resultKey = await resolvedFor(deviceId, "r-repeat-target", { runId: "a", createdAt: 1 });
    await outboxIn(deviceId, resultKey, "played");
    await os.seedRun(deviceId, { runId: "later", createdAt: 2, voiceTargetId: "desk" });

    const toLatest = await os.requestRepeat(deviceId, "r-repeat-target");
    await waitFor(
      () => os.playback(deviceId, toLatest),
      (playback) => playback?.state === "played",
    );
    const toNamed = await os.requestRepeat(deviceId, "r-repeat-target", undefined, "hall");
    await waitFor(
      () => os.playback(deviceId, toNamed),
      (playback) => playback?.state === "played",
    );
    const targets = (await startsFor(deviceId)).map((start) => [
      start.frame.playbackId,
      start.frame.voiceTargetId,
    ]);
    expect(targets.slice(1)).toEqual([
      [toLatest, "desk"],
      [toNamed, "hall"],
    ]);
  });

  it("settles a playback whose job gives up before sending as failed worker_lost, never sending it", async () => {
    const deviceId = newDevice();
    await os.setPresence(deviceId);
    const playbackId = "repeat-without-target";
    await t.redis.hset(os.device(deviceId).playback(playbackId), {
      deviceId,
      playbackId,
      resultKey: "originating-instance|r-none",
      resultId: "r-none",
      kind: "repeat",
      state: "queued",
      queuedAt: String(Date.now()),
      createdAt: String(Date.now()),
      text: "never said",
    });
    const queue = new PlaybackQueue({
      connection: t.connections.blocking("test-queue"),
      prefix: t.keys.bullPrefix,
      maxAttempts: 3,
      retryDelayMs: 50,
      retentionMs: 60_000,
    });
    await queue.enqueue("repeat", { deviceId, playbackId });
    await queue.close();
    expect(
      await waitFor(
        () => os.playback(deviceId, playbackId),
        (playback) => playback?.state === "failed",
      ),
    ).toMatchObject({ state: "failed", reason: "worker_lost" });
    expect(await startsFor(deviceId)).toHaveLength(0);
  });

  it("exposes BullMQ queue counts at scrape time", async () => {
    expect(
      sampleValue(await metricsText(), "tts_playback_queue_jobs", { state: "completed" }),
    ).toBeGreaterThan(0);
  });
});
