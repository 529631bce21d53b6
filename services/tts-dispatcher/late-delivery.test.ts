import { Job, Queue } from "bullmq";
import { afterAll, afterEach, beforeAll, describe, expect, it } from "vitest";
import { QUEUE_CATALOG } from "../../libs/contract/catalog.js";
import type { HostedServices } from "../../libs/service/service-host.js";
import { playbackJobId } from "./playback/playback-ids.js";
import { createTestRedis, waitFor, type TestRedis } from "../../test/helpers/test-redis.js";
import { OsStoreFixture, StreamLamp } from "../../test/tts/os-store-fixture.js";
import { startTtsDispatcher } from "../../test/tts/tts-service.js";

/**
 * A Lamp that is away longer than any retry budget: the service re-checks every 100 ms and has 2 attempts, so a
 * playback that outlives many re-checks proves that waiting spends none; a repeat waits at most 600 ms.
 */
const LATE_DELIVERY_ENV = {
  PLAYBACK_OFFLINE_RECHECK_MS: "100",
  PLAYBACK_MAX_ATTEMPTS: "2",
  PLAYBACK_REPEAT_WAIT_MS: "600",
};

let t: TestRedis;
let os: OsStoreFixture;
let service: HostedServices | undefined;
let lamp: StreamLamp | undefined;
let deviceSeq = 0;
/** Read-only handle on the worker's queue, to see how often a job ran and how many attempts it spent. */
let jobs: Queue;

beforeAll(async () => {
  t = createTestRedis("tts-late");
  os = new OsStoreFixture(t.redis, t.keys);
  service = await startTtsDispatcher(t, LATE_DELIVERY_ENV);
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

const newDevice = () => `lamp-late-${++deviceSeq}`;
const jobOf = (deviceId: string, playbackId: string) => Job.fromId(jobs, playbackJobId(deviceId, playbackId));
const startsFor = async (deviceId: string) =>
  (await os.deliveries()).filter((delivery) => delivery.deviceId === deviceId);

/** The Lamp connects: the waiting answer is sent once and played. */
async function connectAndExpectSpokenOnce(deviceId: string, resultKey: string): Promise<void> {
  await os.lampConnected(deviceId);
  expect(
    await waitFor(
      () => os.outbox(deviceId, resultKey),
      (entry) => entry?.lastAck === "finished",
    ),
  ).toMatchObject({ state: "played" });
  expect(await startsFor(deviceId)).toHaveLength(1);
}

async function queuedAnswer(deviceId: string, resultId: string) {
  await os.seedRun(deviceId, { runId: "a", createdAt: 1 });
  const resultKey = await os.seedResolvedResult(deviceId, { resultId, runIds: ["a"] });
  const entry = await waitFor(
    () => os.outbox(deviceId, resultKey),
    (value) => value?.state === "queued",
  );
  return { resultKey, playbackId: String(entry?.playbackId) };
}

describe("late delivery: a playback waits for the Lamp", () => {
  it("waits through more re-checks than it has attempts, spending none, and is spoken once when the Lamp connects", async () => {
    const deviceId = newDevice();
    lamp = new StreamLamp(os).start();
    const { resultKey, playbackId } = await queuedAnswer(deviceId, "r-away-long");
    const waited = await waitFor(
      () => jobOf(deviceId, playbackId),
      (job) => (job?.attemptsStarted ?? 0) >= 5,
    );
    expect(waited?.attemptsStarted).toBeGreaterThanOrEqual(5);
    expect(waited?.attemptsMade).toBe(0);
    expect(await os.outbox(deviceId, resultKey)).toMatchObject({ state: "queued" });

    await connectAndExpectSpokenOnce(deviceId, resultKey);
    expect(await os.runUpdates(deviceId)).toEqual([]);
  });

  it("waits for the Lamp at most PLAYBACK_REPEAT_WAIT_MS for a repeat, then ends it failed lamp_offline and tells the run", async () => {
    const deviceId = newDevice();
    await os.setPresence(deviceId);
    lamp = new StreamLamp(os).start();
    await os.seedRun(deviceId, { runId: "a", createdAt: 1 });
    const resultKey = await os.seedResolvedResult(deviceId, { resultId: "r-repeat-away", runIds: ["a"] });
    await waitFor(
      () => os.outbox(deviceId, resultKey),
      (entry) => entry?.lastAck === "finished",
    );
    await os.clearPresence(deviceId);

    const requestedAt = Date.now();
    const repeatId = await os.requestRepeat(deviceId, "r-repeat-away");
    const repeat = await waitFor(
      () => os.playback(deviceId, repeatId),
      (playback) => playback?.state === "failed",
    );
    expect(repeat).toMatchObject({ kind: "repeat", state: "failed", reason: "lamp_offline" });
    expect(repeat?.failedAt).toBeGreaterThanOrEqual(requestedAt + 600);
    // Its one attempt is the run that ended it; the wait before spent none. (The job completes just after its step.)
    const ended = await waitFor(
      () => jobOf(deviceId, repeatId),
      (job) => job?.finishedOn !== undefined,
    );
    expect(ended?.attemptsMade).toBe(1);
    expect(await os.awaitingLamp(deviceId)).toEqual([]);
    expect(await startsFor(deviceId)).toHaveLength(1);
    expect(await os.runUpdates(deviceId)).toEqual([
      expect.objectContaining({
        runId: "a",
        change: "playback",
        reason: "lamp_offline",
        playbackId: repeatId,
      }),
    ]);
  });

  it("stops promptly while playbacks wait, and after a restart the waiting playback is spoken once on reconnect", async () => {
    const deviceId = newDevice();
    lamp = new StreamLamp(os).start();
    const { resultKey, playbackId } = await queuedAnswer(deviceId, "r-wait-across-restart");
    expect(await waitFor(async () => (await os.awaitingLamp(deviceId)).includes(playbackId), Boolean)).toBe(
      true,
    );

    const stopping = Date.now();
    await service?.stop();
    expect(Date.now() - stopping).toBeLessThan(2_000);
    service = await startTtsDispatcher(t, LATE_DELIVERY_ENV);

    await connectAndExpectSpokenOnce(deviceId, resultKey);
  });
});
