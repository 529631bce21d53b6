import { STREAM_CATALOG } from "../../libs/contract/catalog.js";
import { afterEach, beforeEach, describe, expect, it } from "vitest";

import { hostServices, type HostedServices } from "../../libs/service/service-host.js";
import { routerService } from "../../services/router/definition.js";
import { runResolverService } from "../../services/run-resolver/definition.js";
import { ttsDispatcherService } from "../../services/tts-dispatcher/definition.js";
import { corpusAvailable } from "../helpers/corpus.js";
import { osReplayCases } from "../helpers/os-replay-cases.js";
import { groupDrained } from "../helpers/stream-progress.js";
import { createTestRedis, waitFor, type TestRedis } from "../helpers/test-redis.js";
import { ScriptedHarnessPeer } from "../os/harness-peer.js";
import { HARNESS_SECRET, osEnv, pushAndSettle, resultEvent, seedRun } from "../os/os-fixture.js";
import { OsStoreFixture, StreamLamp } from "./os-store-fixture.js";
import { ttsTestEnv } from "./tts-service.js";

const DEVICE = "lamp-speak-once";
let t: TestRedis;
let os: OsStoreFixture;
let peer: ScriptedHarnessPeer;
let services: HostedServices;
let lamp: StreamLamp;

beforeEach(async () => {
  t = createTestRedis("tts-replay");
  os = new OsStoreFixture(t.redis, t.keys);
  peer = await ScriptedHarnessPeer.start(HARNESS_SECRET);
});
afterEach(async () => {
  lamp?.stop();
  await services?.stop();
  await peer.close();
  await t.cleanup();
});

async function startPipeline(): Promise<void> {
  services = await hostServices("test", [routerService, runResolverService, ttsDispatcherService], {
    ...ttsTestEnv(t),
    ...osEnv(t, peer),
  });
  await waitFor(
    () => peer.framesOf(DEVICE, "hello").length,
    (n) => n === 1,
  );
  await os.setPresence(DEVICE);
  lamp = new StreamLamp(os).start();
}

/** True when tts-dispatcher has read and acked everything in os.resolved. */
const dispatcherIdle = () =>
  groupDrained(t.redis, t.keys.stream(STREAM_CATALOG.osResolved.name), "tts-dispatcher");

/** Outbox entries, playback jobs and playback.start commands so far: each must move by ttsEnqueueCount. */
async function utterances() {
  expect(await waitFor(dispatcherIdle, Boolean)).toBe(true);
  return {
    outbox: (await os.outboxKeys(DEVICE)).length,
    jobs: (await os.playbackJobIds()).length,
    starts: (await os.deliveries()).length,
  };
}

async function settledUtterances(expected: number) {
  return waitFor(utterances, (counts) => counts.starts === expected && counts.jobs === expected);
}

describe.skipIf(!corpusAvailable)(
  `speak once per result through router + run-resolver + tts-dispatcher`,
  () => {
    it.each(["turn-correlation-v2", "summary-correlation"])(
      "%s os-replay-cases: ttsEnqueueCount holds at every step (outbox entries, jobs and playback.start)",
      async (profile) => {
        const cases = osReplayCases(profile);
        peer.originatingInstanceId = cases.originatingServerInstanceId;
        for (const input of cases.pending)
          await seedRun(t, peer, DEVICE, {
            key: input.idempotencyKey,
            deliveryId: input.deliveryId,
            serverInstanceId: cases.originatingServerInstanceId,
          });
        await startPipeline();

        let total = 0;
        for (const [index, step] of cases.steps.entries()) {
          if (step.event.type === "resync") peer.transportInstanceId = String(step.event.serverInstanceId);
          await pushAndSettle(t, peer, services.url, DEVICE, step.event);
          total += step.expected.ttsEnqueueCount ?? 0;
          const counts = await settledUtterances(total);
          expect(counts, `step ${index}`).toEqual({ outbox: total, jobs: total, starts: total });
        }
        expect(await waitFor(() => os.dispatcherIdle(), Boolean)).toBe(true);
        expect(await utterances()).toEqual({ outbox: 2, jobs: 2, starts: 2 });
      },
    );
  },
);

describe("speak once across replays", () => {
  it("one utterance for a group; identical and reordered replays add no entry, job or playback.start", async () => {
    const runs = { a: "key-a", b: "key-b", c: "key-c" };
    for (const key of Object.values(runs))
      await seedRun(t, peer, DEVICE, {
        key,
        deliveryId: `delivery-${key}`,
        serverInstanceId: "originating-instance",
      });
    await startPipeline();
    const group = resultEvent({
      resultId: "group-ab",
      members: [
        ["delivery-key-a", "key-a"],
        ["delivery-key-b", "key-b"],
      ],
    });
    const single = resultEvent({ resultId: "single-c", members: [["delivery-key-c", "key-c"]] });

    await pushAndSettle(t, peer, services.url, DEVICE, group);
    expect(await settledUtterances(1)).toEqual({ outbox: 1, jobs: 1, starts: 1 });
    await pushAndSettle(t, peer, services.url, DEVICE, single);
    expect(await settledUtterances(2)).toEqual({ outbox: 2, jobs: 2, starts: 2 });

    await pushAndSettle(t, peer, services.url, DEVICE, { ...single, eventId: 900 });
    await pushAndSettle(t, peer, services.url, DEVICE, { ...group, eventId: 901 });
    await pushAndSettle(t, peer, services.url, DEVICE, group);
    expect(await waitFor(() => os.dispatcherIdle(), Boolean)).toBe(true);
    expect(await utterances()).toEqual({ outbox: 2, jobs: 2, starts: 2 });
    const spokenResults = (await os.deliveries()).map((delivery) => delivery.frame.resultId);
    expect(spokenResults).toEqual(["group-ab", "single-c"]);
  });
});
