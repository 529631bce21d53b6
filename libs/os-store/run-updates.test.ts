import { readFileSync } from "node:fs";
import { afterEach, beforeEach, describe, expect, it } from "vitest";
import { z } from "zod";
import { readRunUpdateNotice, RUN_UPDATES_KEPT, runUpdateRecordSchema } from "../contract/run-update.js";
import { NamedLuaScript } from "../redis/lua-script.js";
import { parseEntryPayload } from "../streams/stream-entry.js";
import { createTestRedis, waitFor, type TestRedis } from "../../test/helpers/test-redis.js";
import { OsDeviceKeys, runUpdatesChannelPattern } from "./os-keys.js";

const emittedSchema = z.object({}).strict();
const emit = NamedLuaScript.fromFile<
  { runId: string; change: string; reason?: string; now: number },
  typeof emittedSchema
>(new URL("./test-lua/emit-run-update-1.lua", import.meta.url), emittedSchema);
const DEVICE = "lamp-updates";
let t: TestRedis;
let device: OsDeviceKeys;

beforeEach(async () => {
  t = createTestRedis("run-updates");
  device = new OsDeviceKeys(t.keys, DEVICE);
  await t.redis.hset(device.run("run-1"), {
    runId: "run-1",
    deviceId: DEVICE,
    requestId: "11111111-1111-4111-8111-111111111111",
    state: "unknown",
    endReason: "ENGINE_EXITED",
    receiptState: "unknown",
    receiptInput: "native_queue/accepted",
  });
});
afterEach(() => t.cleanup());

async function updates() {
  const entries = await t.redis.xrange(device.runUpdates, "-", "+");
  return entries.map(([id, fields]) => {
    const parsed = parseEntryPayload(runUpdateRecordSchema, fields);
    if (!parsed.ok) throw new Error(parsed.error);
    return { id, ...parsed.value };
  });
}

describe("emit_run_update: the device's ordered run.update log", () => {
  it("writes what the run hash says, parseable by the record schema, with ids 0-1, 0-2, … and a pub/sub notice", async () => {
    const subscriber = t.redis.duplicate();
    const notices: ReturnType<typeof readRunUpdateNotice>[] = [];
    subscriber.on("pmessage", (_pattern: string, _channel: string, message: string) =>
      notices.push(readRunUpdateNotice(message)),
    );
    await subscriber.psubscribe(runUpdatesChannelPattern(t.keys));
    await emit.run(t.redis, [device.base], { runId: "run-1", change: "unknown", now: 1_000 });
    await emit.run(t.redis, [device.base], {
      runId: "run-1",
      change: "playback",
      reason: "ack_timeout",
      now: 2_000,
    });
    const stored = await updates();
    expect(stored).toEqual([
      {
        id: "0-1",
        runId: "run-1",
        requestId: "11111111-1111-4111-8111-111111111111",
        state: "unknown",
        change: "unknown",
        reason: "ENGINE_EXITED",
        receiptState: "unknown",
        input: { mode: "native_queue", phase: "accepted" },
        at: 1_000,
      },
      expect.objectContaining({ id: "0-2", change: "playback", reason: "ack_timeout", at: 2_000 }),
    ]);
    await waitFor(
      () => Promise.resolve(notices.length),
      (count) => count === 2,
    );
    // Each notice carries the update exactly as the log holds it.
    expect(notices).toEqual(
      stored.map(({ id, ...update }) => ({
        deviceId: DEVICE,
        notice: { deviceId: DEVICE, updateId: Number(id.slice(2)), update },
      })),
    );
    subscriber.disconnect();
  });

  it("keeps about the newest RUN_UPDATES_KEPT and never reuses an id, however much was trimmed", async () => {
    expect(readFileSync(new URL("../redis/lua-includes/run-update.lua", import.meta.url), "utf8")).toContain(
      `'MAXLEN', '~', ${RUN_UPDATES_KEPT},`,
    );
    for (let index = 0; index < RUN_UPDATES_KEPT + 300; index += 1)
      await emit.run(t.redis, [device.base], { runId: "run-1", change: "receipt", now: index });
    const length = await t.redis.xlen(device.runUpdates);
    expect(length).toBeGreaterThanOrEqual(RUN_UPDATES_KEPT);
    expect(length).toBeLessThan(RUN_UPDATES_KEPT + 300);
    await emit.run(t.redis, [device.base], { runId: "run-1", change: "receipt", now: 9_999 });
    const [newest] = await t.redis.xrevrange(device.runUpdates, "+", "-", "COUNT", 1);
    expect(newest?.[0]).toBe(`0-${RUN_UPDATES_KEPT + 301}`);
  });

  it("emits nothing for a run that does not exist", async () => {
    await emit.run(t.redis, [device.base], { runId: "run-missing", change: "resolved", now: 1 });
    expect(await t.redis.exists(device.runUpdates)).toBe(0);
  });
});
