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

/** Long enough that a test only passes if the job behind is woken by the one ahead, not by the end of its wait. */
const LONG_WAIT_MS = 120_000;
const SHORT_WAIT_MS = 1_500;
const INSTANCE = "originating-instance";

let t: TestRedis;
let os: OsStoreFixture;
let patient: HostedServices | undefined;
let jobs: Queue;
let deviceSeq = 0;

beforeAll(async () => {
  t = createTestRedis("tts-speech-order");
  os = new OsStoreFixture(t.redis, t.keys);
  patient = await startTtsDispatcher(t, {
    SPEECH_ORDER_WAIT_MS: String(LONG_WAIT_MS),
    PLAYBACK_ACK_TIMEOUT_MS: String(LONG_WAIT_MS),
  });
  jobs = new Queue(QUEUE_CATALOG.lampPlayback.name, {
    connection: { url: t.url },
    prefix: t.keys.bullPrefix,
  });
});
afterAll(async () => {
  await jobs.close();
  await patient?.stop();
  await t.cleanup();
});

const newDevice = () => `lamp-order-${++deviceSeq}`;
const startedResults = async (deviceId: string) =>
  (await os.deliveries())
    .filter((delivery) => delivery.deviceId === deviceId)
    .map((delivery) => delivery.frame.resultId);
/** The answer's job is delayed (parked), which is what a job waiting behind an earlier answer does. */
const answerParked = (deviceId: string, resultId: string) =>
  waitFor(
    async () =>
      (
        await Job.fromId(
          jobs,
          playbackJobId(deviceId, answerPlaybackId({ deviceId, serverInstanceId: INSTANCE, resultId })),
        )
      )?.isDelayed(),
    Boolean,
  );

/** Once the Lamp has acked every answer it was sent, nothing of the device is left in the speech order. */
async function orderAfterAcks(fixture: OsStoreFixture, deviceId: string): Promise<string[]> {
  for (const start of (await fixture.deliveries()).filter((delivery) => delivery.deviceId === deviceId))
    await fixture.ack(deviceId, String(start.frame.playbackId), "started");
  return waitFor(
    () => fixture.speechOrder(deviceId),
    (order) => order.length === 0,
  );
}

async function resolve(deviceId: string, resultId: string, createdAt: number): Promise<string> {
  await os.seedRun(deviceId, { runId: `run-${resultId}`, createdAt });
  return os.seedResolvedResult(deviceId, { resultId, runIds: [`run-${resultId}`] });
}

describe("speech order: a device's answers start in the order the router routed them", () => {
  it("an answer that reaches the outbox before an earlier-routed one waits for it, and is woken when it goes", async () => {
    const deviceId = newDevice();
    await os.setPresence(deviceId);
    const routedAt = Date.now();
    await os.routed(deviceId, resultKeyOf(INSTANCE, "first"), routedAt);
    await os.routed(deviceId, resultKeyOf(INSTANCE, "second"), routedAt + 1);

    const second = await resolve(deviceId, "second", 2);
    expect(await answerParked(deviceId, "second")).toBe(true);
    expect(await startedResults(deviceId)).toEqual([]);
    expect(await os.outbox(deviceId, second)).toMatchObject({ state: "queued" });

    await resolve(deviceId, "first", 1);
    const [first] = await waitFor(
      async () => (await os.deliveries()).filter((delivery) => delivery.deviceId === deviceId),
      (starts) => starts.length === 1,
    );
    expect(first?.frame.resultId).toBe("first");
    // The next answer goes once the Lamp says the first one started, not before.
    expect(await answerParked(deviceId, "second")).toBe(true);
    await os.ack(deviceId, String(first?.frame.playbackId), "started");
    const started = await waitFor(
      () => startedResults(deviceId),
      (results) => results.length === 2,
    );
    expect(started).toEqual(["first", "second"]);
    expect(await orderAfterAcks(os, deviceId)).toEqual([]);
  });

  it("an answer with no earlier result owed starts at once and leaves the order", async () => {
    const deviceId = newDevice();
    await os.setPresence(deviceId);
    const key = resultKeyOf(INSTANCE, "only");
    await os.routed(deviceId, key);
    await resolve(deviceId, "only", 1);
    expect(
      await waitFor(
        () => startedResults(deviceId),
        (results) => results.length === 1,
      ),
    ).toEqual(["only"]);
    expect(await orderAfterAcks(os, deviceId)).toEqual([]);
  });

  it("an earlier result already started on the Lamp (or whose entry was left behind) does not hold a later one", async () => {
    const deviceId = newDevice();
    await os.setPresence(deviceId);
    await os.routed(deviceId, resultKeyOf(INSTANCE, "spoken"), Date.now() - 10);
    const spoken = await resolve(deviceId, "spoken", 1);
    const [start] = await waitFor(
      async () => (await os.deliveries()).filter((delivery) => delivery.deviceId === deviceId),
      (starts) => starts.length === 1,
    );
    await os.ack(deviceId, String(start?.frame.playbackId), "started");
    await waitFor(
      () => os.outbox(deviceId, spoken),
      (entry) => entry?.state === "played",
    );
    // A re-route after it was spoken puts it back in the order; it is no longer owed, so it holds nothing.
    await os.routed(deviceId, resultKeyOf(INSTANCE, "spoken"), Date.now() - 5);
    await os.routed(deviceId, resultKeyOf(INSTANCE, "next"));
    await resolve(deviceId, "next", 2);
    expect(
      await waitFor(
        () => startedResults(deviceId),
        (results) => results.length === 2,
      ),
    ).toEqual(["spoken", "next"]);
    expect(await orderAfterAcks(os, deviceId)).toEqual([]);
  });
});

describe("speech order: the wait for an earlier result is bounded (SPEECH_ORDER_WAIT_MS)", () => {
  let hasty: HostedServices | undefined;
  let tShort: TestRedis;
  let osShort: OsStoreFixture;
  beforeAll(async () => {
    tShort = createTestRedis("tts-speech-order-bound");
    osShort = new OsStoreFixture(tShort.redis, tShort.keys);
    hasty = await startTtsDispatcher(tShort, { SPEECH_ORDER_WAIT_MS: String(SHORT_WAIT_MS) });
  });
  afterAll(async () => {
    await hasty?.stop();
    await tShort.cleanup();
  });

  it("answers queued while the Lamp was away start in routed order when it connects, however long ago that was", async () => {
    const deviceId = newDevice();
    const longAgo = Date.now() - 60_000;
    await osShort.routed(deviceId, resultKeyOf(INSTANCE, "away-first"), longAgo);
    await osShort.routed(deviceId, resultKeyOf(INSTANCE, "away-second"), longAgo + 1);
    for (const [resultId, createdAt] of [
      ["away-second", 2],
      ["away-first", 1],
    ] as const) {
      await osShort.seedRun(deviceId, { runId: `run-${resultId}`, createdAt });
      await osShort.seedResolvedResult(deviceId, { resultId, runIds: [`run-${resultId}`] });
    }
    await waitFor(
      () => osShort.awaitingLamp(deviceId),
      (waiting) => waiting.length === 2,
    );
    await osShort.lampConnected(deviceId);
    const starts = await waitFor(
      async () => (await osShort.deliveries()).filter((delivery) => delivery.deviceId === deviceId),
      (found) => found.length === 2,
    );
    expect(starts.map((start) => start.frame.resultId)).toEqual(["away-first", "away-second"]);
  });

  it("a result routed but never resolved holds the next answer until its wait ends, then is dropped", async () => {
    const deviceId = newDevice();
    await osShort.setPresence(deviceId);
    const routedAt = Date.now();
    await osShort.routed(deviceId, resultKeyOf(INSTANCE, "lost"), routedAt);
    await osShort.routed(deviceId, resultKeyOf(INSTANCE, "after"), routedAt + 1);
    await osShort.seedRun(deviceId, { runId: "run-after", createdAt: 1 });
    await osShort.seedResolvedResult(deviceId, { resultId: "after", runIds: ["run-after"] });

    const [start] = await waitFor(
      async () => (await osShort.deliveries()).filter((delivery) => delivery.deviceId === deviceId),
      (starts) => starts.length === 1,
      { timeoutMs: SHORT_WAIT_MS + 10_000 },
    );
    expect(start?.frame.resultId).toBe("after");
    expect(start?.sentAt).toBeGreaterThanOrEqual(routedAt + SHORT_WAIT_MS);
    expect(await orderAfterAcks(osShort, deviceId)).toEqual([]);
  });
});

describe("speech order: an answer nobody works on does not hold the next one", () => {
  let tOrphan: TestRedis;
  let osOrphan: OsStoreFixture;
  let service: HostedServices | undefined;
  beforeAll(async () => {
    tOrphan = createTestRedis("tts-speech-order-orphan");
    osOrphan = new OsStoreFixture(tOrphan.redis, tOrphan.keys);
    service = await startTtsDispatcher(tOrphan, { SPEECH_ORDER_WAIT_MS: String(SHORT_WAIT_MS) });
  });
  afterAll(async () => {
    await service?.stop();
    await tOrphan.cleanup();
  });

  it("a queued answer whose job never came (dead-lettered after its outbox entry) holds the next for twice the wait", async () => {
    const deviceId = newDevice();
    await osOrphan.setPresence(deviceId);
    const createdAt = Date.now();
    const orphanKey = resultKeyOf(INSTANCE, "orphan");
    await osOrphan.routed(deviceId, orphanKey, createdAt);
    await osOrphan.routed(deviceId, resultKeyOf(INSTANCE, "heard"), createdAt + 1);
    const orphanPlayback = answerPlaybackId({ deviceId, serverInstanceId: INSTANCE, resultId: "orphan" });
    // What the tts-dispatcher had written when it died before enqueueing the job: the entry and a queued playback.
    await new PlaybackStore(tOrphan.redis, tOrphan.keys, SHORT_WAIT_MS).createOutboxEntry(
      {
        deviceId,
        resultKey: orphanKey,
        resultId: "orphan",
        state: "queued",
        speechText: "Never enqueued.",
        voiceTargetId: "target-1",
        voiceTargetExpiresAt: createdAt + LONG_WAIT_MS,
        playbackId: orphanPlayback,
      },
      createdAt,
    );
    await osOrphan.seedRun(deviceId, { runId: "run-heard", createdAt: 2 });
    await osOrphan.seedResolvedResult(deviceId, { resultId: "heard", runIds: ["run-heard"] });

    const [start] = await waitFor(
      async () => (await osOrphan.deliveries()).filter((delivery) => delivery.deviceId === deviceId),
      (starts) => starts.length === 1,
      { timeoutMs: 2 * SHORT_WAIT_MS + 10_000 },
    );
    expect(start?.frame.resultId).toBe("heard");
    expect(start?.sentAt).toBeGreaterThanOrEqual(createdAt + 2 * SHORT_WAIT_MS);
    expect(await osOrphan.outbox(deviceId, orphanKey)).toMatchObject({ state: "queued" });
    expect(await orderAfterAcks(osOrphan, deviceId)).toEqual([]);
  });
});
