import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { resultKeyOf } from "../../../libs/os-store/os-keys.js";
import { createTestRedis, waitFor, type TestRedis } from "../../../test/helpers/test-redis.js";
import { OsStoreFixture } from "../../../test/tts/os-store-fixture.js";
import { PlaybackStore } from "./playback-store.js";

/** A retention short enough to pass within the test. */
const RETENTION_MS = 300;

let t: TestRedis;
let os: OsStoreFixture;
let store: PlaybackStore;

beforeAll(() => {
  t = createTestRedis("tts-repeat-retention");
  os = new OsStoreFixture(t.redis, t.keys);
  store = new PlaybackStore(t.redis, t.keys, RETENTION_MS);
});
afterAll(() => t.cleanup());

describe("every repeat record has an end", () => {
  it("removes repeat playbacks, queued, suppressed and played, once their retention has passed", async () => {
    const deviceId = "lamp-retention";
    const repeat = (playbackId: string, state: "queued" | "suppressed") =>
      store.createRepeat(
        {
          deviceId,
          playbackId,
          resultKey: resultKeyOf("instance-1", "r-1"),
          resultId: "r-1",
          state,
          reason: state === "suppressed" ? "failed_result" : undefined,
          voiceTargetId: "kitchen",
          text: "Said again.",
        },
        Date.now(),
      );
    await repeat("repeat-queued", "queued");
    await repeat("repeat-suppressed", "suppressed");
    await repeat("repeat-played", "queued");
    await store.ack(deviceId, "repeat-played", "finished", Date.now());
    expect(await os.playbackKeys(deviceId)).toHaveLength(3);
    for (const id of ["repeat-queued", "repeat-suppressed", "repeat-played"])
      expect(await t.redis.pttl(os.device(deviceId).playback(id))).toBeGreaterThan(0);

    const left = await waitFor(
      () =>
        t.redis.exists(
          ...["repeat-queued", "repeat-suppressed", "repeat-played"].map((id) =>
            os.device(deviceId).playback(id),
          ),
        ),
      (count) => count === 0,
    );
    expect(left).toBe(0);
  });
});
