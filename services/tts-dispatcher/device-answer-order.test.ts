import { Job, Queue } from "bullmq";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { QUEUE_CATALOG } from "../../libs/contract/catalog.js";
import { resultKeyOf } from "../../libs/os-store/os-keys.js";
import type { HostedServices } from "../../libs/service/service-host.js";
import { answerPlaybackId, playbackJobId } from "./playback/playback-ids.js";
import { PlaybackStore } from "./store/playback-store.js";
import { createTestRedis, waitFor, type TestRedis } from "../../test/helpers/test-redis.js";
import { OsStoreFixture } from "../../test/tts/os-store-fixture.js";
import { startTtsDispatcher } from "../../test/tts/tts-service.js";

/**
 * Far beyond any test's wait: a later answer that is sent at all was woken by the earlier one leaving the line, never
 * by a timeout (no ack deadline, voice target expiry or offline re-check falls due meanwhile).
 */
const NEVER_MS = 600_000;
const INSTANCE = "originating-instance";
const PATIENT_ENV = {
  PLAYBACK_ACK_TIMEOUT_MS: String(NEVER_MS),
  PLAYBACK_OFFLINE_RECHECK_MS: String(NEVER_MS),
};

interface Stack {
  t: TestRedis;
  os: OsStoreFixture;
  service: HostedServices;
  jobs: Queue;
}

async function startStack(label: string, env: Record<string, string>): Promise<Stack> {
  const t = createTestRedis(label);
  const service = await startTtsDispatcher(t, env);
  const jobs = new Queue(QUEUE_CATALOG.lampPlayback.name, {
    connection: { url: t.url },
    prefix: t.keys.bullPrefix,
  });
  return { t, os: new OsStoreFixture(t.redis, t.keys), service, jobs };
}

async function stopStack(stack: Stack | undefined): Promise<void> {
  await stack?.jobs.close();
  await stack?.service.stop();
  await stack?.t.cleanup();
}

let deviceSeq = 0;
const newDevice = () => `lamp-order-${++deviceSeq}`;
const answerOf = (deviceId: string, resultId: string) =>
  answerPlaybackId({ deviceId, serverInstanceId: INSTANCE, resultId });

/** A result of the device resolved (its os.resolved published), each with its own run; returns its resultKey. */
async function resolve({ os }: Stack, deviceId: string, resultId: string): Promise<string> {
  await os.seedRun(deviceId, { runId: `run-${resultId}`, createdAt: ++deviceSeq });
  return os.seedResolvedResult(deviceId, { resultId, runIds: [`run-${resultId}`] });
}

/** The results whose playback.start the device's gateway stream holds, in the order they were written. */
async function sentResults({ os }: Stack, deviceId: string, count: number): Promise<string[]> {
  return waitFor(
    async () =>
      (await os.deliveries())
        .filter((start) => start.deviceId === deviceId)
        .map((start) => start.frame.resultId),
    (results) => results.length >= count,
  );
}

/** The answer's job is delayed: it ended its turn and holds no worker slot while it waits. */
const parked = ({ jobs }: Stack, deviceId: string, resultId: string) =>
  waitFor(
    async () => (await Job.fromId(jobs, playbackJobId(deviceId, answerOf(deviceId, resultId))))?.isDelayed(),
    Boolean,
  );

describe("a device's answers start on its Lamp in the order they were dispatched", () => {
  let stack: Stack;
  beforeAll(async () => {
    stack = await startStack("tts-answer-order", PATIENT_ENV);
  });
  afterAll(() => stopStack(stack));

  it("sends a later answer only once the earlier one started on the Lamp, and at once when it did", async () => {
    const deviceId = newDevice();
    const { os } = stack;
    await os.setPresence(deviceId);
    for (const resultId of ["first", "second", "third"]) await resolve(stack, deviceId, resultId);
    expect(await sentResults(stack, deviceId, 1)).toEqual(["first"]);
    expect(await parked(stack, deviceId, "second")).toBe(true);
    expect(await parked(stack, deviceId, "third")).toBe(true);
    expect(await os.line(deviceId)).toEqual(["first", "second", "third"].map((id) => answerOf(deviceId, id)));

    await os.ack(deviceId, answerOf(deviceId, "first"), "started");
    expect(await sentResults(stack, deviceId, 2)).toEqual(["first", "second"]);
    await os.ack(deviceId, answerOf(deviceId, "second"), "finished");
    expect(await sentResults(stack, deviceId, 3)).toEqual(["first", "second", "third"]);
    await os.ack(deviceId, answerOf(deviceId, "third"), "started");
    expect(
      await waitFor(
        () => os.line(deviceId),
        (line) => line.length === 0,
      ),
    ).toEqual([]);
    expect(await waitFor(() => os.dispatcherIdle(), Boolean)).toBe(true);
  });

  it("sends the next answer at once when the earlier one ends unheard (the Lamp rejects it)", async () => {
    const deviceId = newDevice();
    const { os } = stack;
    await os.setPresence(deviceId);
    await resolve(stack, deviceId, "rejected");
    const next = await resolve(stack, deviceId, "after-reject");
    expect(await sentResults(stack, deviceId, 1)).toEqual(["rejected"]);
    expect(await parked(stack, deviceId, "after-reject")).toBe(true);
    await os.ack(deviceId, answerOf(deviceId, "rejected"), "rejected");
    expect(await sentResults(stack, deviceId, 2)).toEqual(["rejected", "after-reject"]);
    expect(await os.outbox(deviceId, next)).toMatchObject({ state: "sending" });
  });

  it("keeps the order while the Lamp is away: only the first answer waits for it, the rest wait behind it", async () => {
    const deviceId = newDevice();
    const { os } = stack;
    await resolve(stack, deviceId, "away-first");
    await resolve(stack, deviceId, "away-second");
    expect(
      await waitFor(
        () => os.awaitingLamp(deviceId),
        (waiting) => waiting.length === 1,
      ),
    ).toEqual([answerOf(deviceId, "away-first")]);
    expect(await parked(stack, deviceId, "away-second")).toBe(true);

    await os.lampConnected(deviceId);
    expect(await sentResults(stack, deviceId, 1)).toEqual(["away-first"]);
    expect(await parked(stack, deviceId, "away-second")).toBe(true);
    await os.ack(deviceId, answerOf(deviceId, "away-first"), "started");
    expect(await sentResults(stack, deviceId, 2)).toEqual(["away-first", "away-second"]);
  });

  it("puts a repeat in the line behind the answers created before it", async () => {
    const deviceId = newDevice();
    const { os } = stack;
    await os.setPresence(deviceId);
    await resolve(stack, deviceId, "heard");
    await sentResults(stack, deviceId, 1);
    await os.ack(deviceId, answerOf(deviceId, "heard"), "finished");
    await resolve(stack, deviceId, "pending");
    expect(await sentResults(stack, deviceId, 2)).toEqual(["heard", "pending"]);

    const repeatId = await os.requestRepeat(deviceId, "heard");
    expect(
      await waitFor(
        () => os.line(deviceId),
        (line) => line.length === 2,
      ),
    ).toEqual([answerOf(deviceId, "pending"), repeatId]);
    expect(await os.playback(deviceId, repeatId)).toMatchObject({ state: "queued" });
    await os.ack(deviceId, answerOf(deviceId, "pending"), "started");
    expect(await sentResults(stack, deviceId, 3)).toEqual(["heard", "pending", "heard"]);
  });

  it("gives a queued answer that lost its job (os.resolved dead-lettered after its outbox entry) one, then the next", async () => {
    const deviceId = newDevice();
    const { os, t } = stack;
    await os.setPresence(deviceId);
    const orphanKey = resultKeyOf(INSTANCE, "orphan");
    // What the tts-dispatcher had written when its os.resolved entry was dead-lettered: the entry and a queued playback.
    await new PlaybackStore(t.redis, t.keys, NEVER_MS).createOutboxEntry(
      {
        deviceId,
        resultKey: orphanKey,
        resultId: "orphan",
        state: "queued",
        speechText: "Never enqueued.",
        voiceTargetId: "target-1",
        voiceTargetExpiresAt: Date.now() + NEVER_MS,
        playbackId: answerOf(deviceId, "orphan"),
      },
      Date.now(),
    );
    await resolve(stack, deviceId, "behind-orphan");
    expect(await sentResults(stack, deviceId, 1)).toEqual(["orphan"]);
    await os.ack(deviceId, answerOf(deviceId, "orphan"), "started");
    expect(await sentResults(stack, deviceId, 2)).toEqual(["orphan", "behind-orphan"]);
  });
});

describe("an answer never acked holds the next one only until its ack deadline", () => {
  const ACK_TIMEOUT_MS = 1_000;
  let stack: Stack;
  beforeAll(async () => {
    stack = await startStack("tts-answer-order-unacked", {
      PLAYBACK_ACK_TIMEOUT_MS: String(ACK_TIMEOUT_MS),
      PLAYBACK_OFFLINE_RECHECK_MS: String(NEVER_MS),
    });
  });
  afterAll(() => stopStack(stack));

  it("ends the unacked answer uncertain at its deadline and sends the next right after, never the first again", async () => {
    const deviceId = newDevice();
    const { os } = stack;
    await os.setPresence(deviceId);
    const unheard = await resolve(stack, deviceId, "unacked");
    const next = await resolve(stack, deviceId, "after-unacked");
    expect(await sentResults(stack, deviceId, 2)).toEqual(["unacked", "after-unacked"]);
    const first = await os.outbox(deviceId, unheard);
    expect(first).toMatchObject({ state: "uncertain", reason: "ack_timeout" });
    const second = await os.outbox(deviceId, next);
    expect(second?.sendingAt).toBeGreaterThanOrEqual(first?.uncertainAt ?? Infinity);
    expect(await waitFor(() => os.dispatcherIdle(), Boolean)).toBe(true);
    expect(await sentResults(stack, deviceId, 2)).toHaveLength(2);
  });
});
