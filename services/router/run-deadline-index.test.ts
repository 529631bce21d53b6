import { afterEach, beforeEach, describe, expect, it } from "vitest";
import { OsDeviceKeys } from "../../libs/os-store/os-keys.js";
import { createTestRedis, type TestRedis } from "../../test/helpers/test-redis.js";
import { registerVoiceRun, runOf } from "../../test/os/os-fixture.js";
import { RouterStore } from "./router-store.js";

const DEVICE = "lamp-deadline-index";

let t: TestRedis;
let store: RouterStore;
let device: OsDeviceKeys;
beforeEach(() => {
  t = createTestRedis("deadline-index");
  device = new OsDeviceKeys(t.keys, DEVICE);
  store = new RouterStore(t.redis, device, "test");
});
afterEach(() => t.cleanup());

const expiryOf = async (runId: string) => (await runOf(t, DEVICE, runId))?.voiceTargetExpiresAt ?? 0;

describe("router deadline index", () => {
  it("a pending run is due only once its voice target expired before the bound, and ends once", async () => {
    const { runId } = await registerVoiceRun(t, DEVICE);
    const expiresAt = await expiryOf(runId);
    expect(await store.dueRuns(expiresAt - 1, 10)).toEqual({ due: [], nextExpiresAt: expiresAt, held: 0 });
    expect(await t.redis.zscore(device.runDeadlines, runId)).toBe(String(expiresAt));
    expect(await store.dueRuns(expiresAt, 10)).toEqual({ due: [runId], nextExpiresAt: undefined, held: 0 });

    expect(await store.endRun(runId, "RESULT_NOT_RECEIVED", Date.now())).toBe(true);
    expect(await store.endRun(runId, "RECEIPT_NOT_FOUND", Date.now())).toBe(false);
    expect(await runOf(t, DEVICE, runId)).toMatchObject({
      state: "unknown",
      endReason: "RESULT_NOT_RECEIVED",
    });
    expect(await t.redis.exists(device.pendingRuns, device.runDeadlines)).toBe(0);
  });

  it("a run that ended some other way is never due and leaves the index when its deadline comes", async () => {
    const { runId } = await registerVoiceRun(t, DEVICE);
    const expiresAt = await expiryOf(runId);
    expect((await store.dueRuns(0, 10)).due).toEqual([]);
    await store.markSendFailed(runId, "AGENT_NOT_FOUND");
    expect(await t.redis.zcard(device.runDeadlines)).toBe(1);
    expect(await store.dueRuns(expiresAt, 10)).toEqual({ due: [], nextExpiresAt: undefined, held: 0 });
    expect(await t.redis.exists(device.runDeadlines)).toBe(0);
    expect(await store.endRun(runId, "RECEIPT_NOT_FOUND", Date.now())).toBe(false);
    expect((await runOf(t, DEVICE, runId))?.endReason).toBe("AGENT_NOT_FOUND");
  });
});
