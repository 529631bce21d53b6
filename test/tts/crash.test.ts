import { afterEach, beforeEach, describe, expect, it } from "vitest";
import { TsProcess } from "../helpers/child-process.js";
import { createTestRedis, waitFor, type TestRedis } from "../helpers/test-redis.js";
import { OsStoreFixture, StreamLamp } from "./os-store-fixture.js";
import { ttsTestEnv } from "./tts-service.js";

let t: TestRedis;
let os: OsStoreFixture;
let lamp: StreamLamp | undefined;
const processes: TsProcess[] = [];

// A fresh prefix per test: a crash point fires once per prefix.
beforeEach(() => {
  t = createTestRedis("tts-crash");
  os = new OsStoreFixture(t.redis, t.keys);
});
afterEach(async () => {
  lamp?.stop();
  for (const child of processes.splice(0)) await child.kill("SIGKILL");
  await t.cleanup();
});

/** tts-dispatcher as its own process; FAILPOINT makes it SIGKILL itself at that point (NODE_ENV=test only). */
function ttsProcess(crashAt?: "after-outbox" | "mid-send"): TsProcess {
  const child = new TsProcess(
    "services/tts-dispatcher/main.ts",
    ttsTestEnv(t, {
      LOG_LEVEL: "info",
      NODE_ENV: "test",
      CONSUMER_NAME: "tts-crash-1",
      STREAM_CLAIM_MIN_IDLE_MS: "500",
      FAILPOINT: crashAt ? `tts-dispatcher.${crashAt}` : "",
    }),
  );
  processes.push(child);
  return child;
}

const isAlive = (pid: number | undefined) => {
  try {
    return pid !== undefined && process.kill(pid, 0);
  } catch {
    return false;
  }
};

async function crashed(child: TsProcess): Promise<void> {
  expect(
    await waitFor(
      () => isAlive(child.pid),
      (alive) => !alive,
      { timeoutMs: 60_000 },
    ),
  ).toBe(false);
  // It died at its crash point after starting, not of a bad configuration.
  expect(child.log).toContain("services started");
}

async function resolvedResult(deviceId: string, resultId: string): Promise<string> {
  await os.setPresence(deviceId);
  await os.seedRun(deviceId, { runId: "a", createdAt: 1 });
  return os.seedResolvedResult(deviceId, { resultId, runIds: ["a"] });
}

describe("tts-dispatcher crash safety (SIGKILL)", () => {
  it("killed between the outbox write and the job add: after restart the result is spoken exactly once", async () => {
    const deviceId = "lamp-crash-outbox";
    lamp = new StreamLamp(os).start();
    const resultKey = await resolvedResult(deviceId, "r-crash-after-outbox");

    await crashed(ttsProcess("after-outbox"));
    expect(await os.outbox(deviceId, resultKey)).toMatchObject({ state: "queued" });
    expect(await os.playbackJobIds()).toEqual([]);

    await ttsProcess().waitForOutput("services started", 60_000);
    const entry = await waitFor(
      () => os.outbox(deviceId, resultKey),
      (value) => value?.lastAck === "finished",
      { timeoutMs: 30_000 },
    );
    expect(entry).toMatchObject({ state: "played", lastAck: "finished" });
    expect(await os.outboxKeys(deviceId)).toHaveLength(1);
    expect(await os.playbackJobIds()).toHaveLength(1);
    expect((await os.deliveries()).filter((delivery) => delivery.deviceId === deviceId)).toHaveLength(1);
  });

  it("worker killed mid-send with no ack: after restart the entry is uncertain and playback.start was sent once", async () => {
    const deviceId = "lamp-crash-send";
    lamp = new StreamLamp(os, "silent").start();
    const resultKey = await resolvedResult(deviceId, "r-crash-mid-send");

    await crashed(ttsProcess("mid-send"));
    expect(await os.outbox(deviceId, resultKey)).toMatchObject({ state: "sending" });
    const startsBefore = (await os.deliveries()).filter((delivery) => delivery.deviceId === deviceId);
    expect(startsBefore).toHaveLength(1);

    await ttsProcess().waitForOutput("services started", 60_000);
    const entry = await waitFor(
      () => os.outbox(deviceId, resultKey),
      (value) => value?.state === "uncertain",
      { timeoutMs: 30_000 },
    );
    expect(entry).toMatchObject({ state: "uncertain", reason: "send_interrupted" });
    expect(await waitFor(() => os.dispatcherIdle(), Boolean, { timeoutMs: 30_000 })).toBe(true);
    expect((await os.deliveries()).filter((delivery) => delivery.deviceId === deviceId)).toHaveLength(1);
    expect(await os.outbox(deviceId, resultKey)).toMatchObject({ state: "uncertain" });
  });

  it("worker killed mid-send while the Lamp plays it: the ack lands after restart and nothing is sent again", async () => {
    const deviceId = "lamp-crash-send-acked";
    lamp = new StreamLamp(os).start();
    const resultKey = await resolvedResult(deviceId, "r-crash-mid-send-acked");

    await crashed(ttsProcess("mid-send"));
    await ttsProcess().waitForOutput("services started", 60_000);
    const entry = await waitFor(
      () => os.outbox(deviceId, resultKey),
      (value) => value?.lastAck === "finished",
      { timeoutMs: 30_000 },
    );
    expect(entry).toMatchObject({ state: "played", lastAck: "finished" });
    expect(await waitFor(() => os.dispatcherIdle(), Boolean, { timeoutMs: 30_000 })).toBe(true);
    expect((await os.deliveries()).filter((delivery) => delivery.deviceId === deviceId)).toHaveLength(1);
    expect(await os.outbox(deviceId, resultKey)).toMatchObject({ state: "played" });
  });
});
