import { afterAll, beforeAll, describe, expect, it } from "vitest";
import type { HostedServices } from "../../libs/service/service-host.js";
import { createTestRedis, waitFor, type TestRedis } from "../../test/helpers/test-redis.js";
import { OsStoreFixture } from "../../test/tts/os-store-fixture.js";
import { startTtsDispatcher } from "../../test/tts/tts-service.js";

/** No ack deadline falls due during the test: every repeat sent stays unacked, `sending`, throughout. */
const NEVER_MS = 600_000;
const WORKER_SLOTS = 16;
const REPEATS = 2 * WORKER_SLOTS;

let t: TestRedis;
let os: OsStoreFixture;
let service: HostedServices | undefined;

beforeAll(async () => {
  t = createTestRedis("tts-isolation");
  os = new OsStoreFixture(t.redis, t.keys);
  service = await startTtsDispatcher(t, {
    PLAYBACK_ACK_TIMEOUT_MS: String(NEVER_MS),
    PLAYBACK_OFFLINE_RECHECK_MS: String(NEVER_MS),
    PLAYBACK_WORKER_CONCURRENCY: String(WORKER_SLOTS),
  });
});
afterAll(async () => {
  await service?.stop();
  await t.cleanup();
});

const startsFor = async (deviceId: string) =>
  (await os.deliveries()).filter((delivery) => delivery.deviceId === deviceId);

/**
 * Resolves one result for a present Lamp and waits for its playback.start in the gateway stream; answers the ms its
 * playback took from queued to sending (the claim).
 */
async function answerSent(
  deviceId: string,
  resultId: string,
): Promise<{ resultKey: string; delayMs: number }> {
  await os.setPresence(deviceId);
  await os.seedRun(deviceId, { runId: `run-${resultId}`, createdAt: 1 });
  const resultKey = await os.seedResolvedResult(deviceId, { resultId, runIds: [`run-${resultId}`] });
  await waitFor(
    () => startsFor(deviceId),
    (starts) => starts.some((start) => start.frame.resultId === resultId),
  );
  const entry = await os.outbox(deviceId, resultKey);
  return { resultKey, delayMs: (entry?.sendingAt ?? NaN) - (entry?.queuedAt ?? NaN) };
}

describe("no device can take more than its share of the playback worker", () => {
  it("answers another device at once while one device has twice the worker's slots of repeats unacked", async ({
    annotate,
  }) => {
    // The process's first playback warms the worker up; the unloaded figure is the second.
    await answerSent("lamp-warm-up", "r-warm-up");
    const unloaded = await answerSent("lamp-calm", "r-calm");

    const noisy = "lamp-noisy";
    const { resultKey } = await answerSent(noisy, "r-noisy");
    const [answer] = await startsFor(noisy);
    await os.ack(noisy, String(answer?.frame.playbackId), "finished");
    await waitFor(
      () => os.outbox(noisy, resultKey),
      (entry) => entry?.state === "played",
    );
    const repeats: string[] = [];
    for (let index = 0; index < REPEATS; index++) repeats.push(await os.requestRepeat(noisy, "r-noisy"));
    // Every repeat is in the device's line; only its head was sent, and the Lamp acks none of them.
    expect(
      await waitFor(
        () => os.line(noisy),
        (line) => line.length === REPEATS,
      ),
    ).toEqual(repeats);
    expect(
      await waitFor(
        async () => (await startsFor(noisy)).length,
        (count) => count === 2,
      ),
    ).toBe(2);

    const loaded = await answerSent("lamp-quiet", "r-quiet");
    expect((await startsFor("lamp-quiet")).map((start) => start.frame.resultId)).toEqual(["r-quiet"]);
    const states = await Promise.all(repeats.map(async (id) => (await os.playback(noisy, id))?.state));
    expect(states.filter((state) => state === "sending")).toHaveLength(1);
    expect(states.filter((state) => state === "queued")).toHaveLength(REPEATS - 1);
    expect(await startsFor(noisy)).toHaveLength(2);
    await annotate(
      `queued → sending: ${unloaded.delayMs} ms unloaded, ${loaded.delayMs} ms with ${REPEATS} unacked repeats of another device`,
    );
  });
});
