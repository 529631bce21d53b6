import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { resultKeyOf } from "../../../libs/os-store/os-keys.js";
import { createTestRedis, type TestRedis } from "../../../test/helpers/test-redis.js";
import { OsStoreFixture } from "../../../test/tts/os-store-fixture.js";
import { PlaybackStore, type ClaimSettings } from "./playback-store.js";

const CLAIM: ClaimSettings = { offlineRecheckMs: 5_000, repeatWaitMs: 60_000 };

let t: TestRedis;
let os: OsStoreFixture;
let store: PlaybackStore;
let deviceSeq = 0;

beforeAll(() => {
  t = createTestRedis("tts-playback-claim");
  os = new OsStoreFixture(t.redis, t.keys);
  store = new PlaybackStore(t.redis, t.keys, 60_000);
});
afterAll(() => t.cleanup());

async function queuedRepeat(voiceTargetId: string): Promise<{ deviceId: string; playbackId: string }> {
  const deviceId = `lamp-claim-${++deviceSeq}`;
  const playbackId = `repeat-${deviceSeq}`;
  await store.createRepeat(
    {
      deviceId,
      playbackId,
      resultKey: resultKeyOf("instance-1", `result-${deviceSeq}`),
      resultId: `result-${deviceSeq}`,
      state: "queued",
      voiceTargetId,
      text: "The answer, rendered for speech.",
    },
    Date.now(),
  );
  return { deviceId, playbackId };
}

describe("the playback claim hands the worker what it sends", () => {
  it("a claim that moves to sending returns the playback.start's contents and the gateway", async () => {
    const { deviceId, playbackId } = await queuedRepeat("kitchen");
    await os.setPresence(deviceId, "gateway-7");
    const claim = await store.claim(deviceId, playbackId, CLAIM, Date.now());
    expect(claim).toMatchObject({ verdict: "sending", kind: "repeat", gatewayId: "gateway-7" });
    expect("send" in claim && claim.send).toEqual({
      resultKey: resultKeyOf("instance-1", `result-${deviceSeq}`),
      resultId: `result-${deviceSeq}`,
      voiceTargetId: "kitchen",
      text: "The answer, rendered for speech.",
    });
    expect(await os.playback(deviceId, playbackId)).toMatchObject({
      state: "sending",
      gatewayId: "gateway-7",
    });
  });

  it("a claim that does not send carries nothing to send", async () => {
    const { deviceId, playbackId } = await queuedRepeat("kitchen");
    const offline = await store.claim(deviceId, playbackId, CLAIM, Date.now());
    expect(offline.verdict).toBe("offline");
    expect(offline).not.toHaveProperty("send");
  });

  it("a queued playback without a voice target is refused as invalid and left queued", async () => {
    const { deviceId, playbackId } = await queuedRepeat("");
    await os.setPresence(deviceId);
    const claim = await store.claim(deviceId, playbackId, CLAIM, Date.now());
    expect(claim).toEqual({ verdict: "invalid" });
    expect(await os.playback(deviceId, playbackId)).toMatchObject({ state: "queued" });
  });

  it("a claim behind a head past its voice target ends that head, counts it, and is sent itself", async () => {
    const deviceId = `lamp-claim-${++deviceSeq}`;
    await os.setPresence(deviceId);
    const now = Date.now();
    const answer = (resultId: string, voiceTargetExpiresAt: number) =>
      store.createOutboxEntry(
        {
          deviceId,
          resultKey: resultKeyOf("instance-1", resultId),
          resultId,
          state: "queued",
          speechText: `The answer to ${resultId}.`,
          voiceTargetId: "kitchen",
          voiceTargetExpiresAt,
          playbackId: `answer-${resultId}`,
        },
        now,
      );
    await answer("stale", now + 1);
    await answer("fresh", now + 60_000);
    expect(await os.line(deviceId)).toEqual(["answer-stale", "answer-fresh"]);

    const claim = await store.claim(deviceId, "answer-fresh", CLAIM, now + 2);
    expect(claim).toMatchObject({
      verdict: "sending",
      endedHeads: [{ kind: "answer", state: "suppressed", reason: "expired" }],
    });
    expect(await os.playback(deviceId, "answer-stale")).toMatchObject({
      state: "suppressed",
      reason: "expired",
    });
    expect(await os.line(deviceId)).toEqual(["answer-fresh"]);
  });
});
