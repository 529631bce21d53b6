import { randomUUID } from "node:crypto";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import WebSocket from "ws";
import { signToken } from "../../libs/auth/tokens.js";
import { OsDeviceKeys } from "../../libs/os-store/os-keys.js";
import { hostServices, type HostedServices } from "../../libs/service/service-host.js";
import { deviceGatewayService } from "../../services/device-gateway/definition.js";
import { PlaybackStore } from "../../services/tts-dispatcher/store/playback-store.js";
import { createTestRedis, waitFor, type TestRedis } from "../helpers/test-redis.js";
import { lampUrl, voiceRequest } from "../hostile/lamp-world.js";
import { storeRepeatableResult } from "./os-fixture.js";

const SECRET = "lamp-limits-secret-0123456789abcdef";

type Frame = Record<string, unknown>;

/** One device-gateway on a fresh prefix with the given limits; answers do not wait for a receipt unless told. */
function useGateway(label: string, env: Record<string, string>) {
  const world = {} as { t: TestRedis; services: HostedServices };
  beforeAll(async () => {
    world.t = createTestRedis(label);
    world.services = await hostServices("test", [deviceGatewayService], {
      REDIS_URL: world.t.url,
      KEY_PREFIX: world.t.keys.prefix,
      STREAM_PARTITIONS: String(world.t.keys.partitions),
      PORT: "0",
      LOG_LEVEL: "silent",
      AUTH_JWT_SECRET: SECRET,
      RECEIPT_WAIT_MS: "0",
      ...env,
    });
  });
  afterAll(async () => {
    await world.services.stop();
    await world.t.cleanup();
  });
  return world;
}

/** A Lamp socket that collects every answer by requestId. */
async function connect(services: HostedServices, deviceId: string) {
  const token = await signToken(SECRET, { audience: "os", sub: deviceId, role: "device" });
  const socket = new WebSocket(lampUrl(services.url), { headers: { authorization: `Bearer ${token}` } });
  const answers = new Map<string, Frame>();
  socket.on("message", (data) => {
    const frame = JSON.parse(data.toString()) as Frame;
    if (typeof frame.requestId === "string" && String(frame.type).endsWith("_result"))
      answers.set(frame.requestId, frame);
  });
  await new Promise((resolve, reject) => {
    socket.once("open", resolve);
    socket.once("error", reject);
  });
  const answerTo = async (requestId: string) => {
    const answer = await waitFor(
      () => answers.get(requestId),
      (frame) => frame !== undefined,
    );
    if (!answer) throw new Error(`no answer to ${requestId}`);
    return answer;
  };
  return { socket, answers, answerTo, send: (frame: unknown) => socket.send(JSON.stringify(frame)) };
}

/** What a device's runs left in the store: every key a registration writes. */
async function registeredState(t: TestRedis, deviceId: string) {
  const device = new OsDeviceKeys(t.keys, deviceId);
  const requestKeys = await t.redis.keys(device.request("*"));
  return {
    runs: (await t.redis.zrange(device.runs, 0, -1)).sort(),
    pending: await t.redis.zcard(device.pendingRuns),
    commands: await t.redis.xlen(device.commands),
    requests: requestKeys.length,
    bucket: await t.redis.hgetall(device.voiceRequestRate),
  };
}

const errorCode = (answer: Frame | undefined) => (answer?.error as { code?: string } | undefined)?.code;

describe("device limits: the voice.request rate per device (burst 10, 2/s)", () => {
  const world = useGateway("limits-rate", {
    LAMP_RATE_LIMIT_BURST: "10",
    LAMP_RATE_LIMIT_PER_SECOND: "2",
    LAMP_MAX_PENDING_RUNS: "1000",
  });

  it("300 voice.requests in a burst over two sockets of one device: at most burst + rate × elapsed are registered, the rest are RATE_LIMITED and left nothing", async () => {
    const device = "lamp-burst";
    const lamps = [await connect(world.services, device), await connect(world.services, device)];
    const requestIds = Array.from({ length: 300 }, () => randomUUID());
    const started = Date.now();
    requestIds.forEach((requestId, index) => lamps[index % 2]?.send(voiceRequest(requestId)));
    const answers = await Promise.all(
      requestIds.map((requestId, index) => lamps[index % 2]!.answerTo(requestId)),
    );
    const elapsedSeconds = (Date.now() - started) / 1000;

    const accepted = answers.filter((answer) => answer.type === "voice.request_result" && !answer.error);
    const refused = answers.filter((answer) => errorCode(answer) !== undefined);
    expect(refused.map(errorCode).every((code) => code === "RATE_LIMITED")).toBe(true);
    expect(accepted.length + refused.length).toBe(300);
    expect(accepted.length).toBeGreaterThanOrEqual(10);
    expect(accepted.length).toBeLessThanOrEqual(Math.floor(10 + 2 * elapsedSeconds));
    expect(await registeredState(world.t, device)).toEqual({
      runs: accepted.map((answer) => String(answer.runId)).sort(),
      pending: accepted.length,
      commands: accepted.length,
      requests: accepted.length,
      bucket: { tokens: expect.any(String), at: expect.any(String) },
    });
    for (const lamp of lamps) lamp.socket.close();
  });

  it("another device has its own bucket", async () => {
    const lamp = await connect(world.services, "lamp-calm");
    const requestId = randomUUID();
    lamp.send(voiceRequest(requestId));
    expect(await lamp.answerTo(requestId)).toMatchObject({ type: "voice.request_result", requestId });
    lamp.socket.close();
  });
});

describe("device limits: an empty bucket (burst 1, refilled once in 1000 s)", () => {
  const world = useGateway("limits-empty", {
    LAMP_RATE_LIMIT_BURST: "1",
    LAMP_RATE_LIMIT_PER_SECOND: "0.001",
  });

  it("refuses a new request with RATE_LIMITED, while the same requestId again still returns its run", async () => {
    const device = "lamp-empty";
    const lamp = await connect(world.services, device);
    const first = voiceRequest();
    lamp.send(first);
    const registered = await lamp.answerTo(first.requestId);
    expect(registered).toMatchObject({ type: "voice.request_result" });
    const before = await registeredState(world.t, device);

    const second = voiceRequest();
    lamp.send(second);
    expect(await lamp.answerTo(second.requestId)).toMatchObject({
      type: "voice.request_result",
      requestId: second.requestId,
      error: { code: "RATE_LIMITED" },
    });
    lamp.answers.delete(first.requestId);
    lamp.send(first);
    expect(await lamp.answerTo(first.requestId)).toMatchObject({
      runId: registered.runId,
      idempotencyKey: registered.idempotencyKey,
    });
    expect(await registeredState(world.t, device)).toEqual(before);
    lamp.socket.close();
  });
});

describe("device limits: the bound on unresolved runs (LAMP_MAX_PENDING_RUNS=2)", () => {
  const world = useGateway("limits-pending", {
    LAMP_RATE_LIMIT_BURST: "1000",
    LAMP_MAX_PENDING_RUNS: "2",
  });

  it("a third pending run is TOO_MANY_PENDING_RUNS and changes nothing; a repeat of a pending run still returns it", async () => {
    const device = "lamp-pending";
    const lamp = await connect(world.services, device);
    const requests = [voiceRequest(), voiceRequest(), voiceRequest()];
    for (const request of requests) lamp.send(request);
    const [first, second, third] = await Promise.all(
      requests.map((request) => lamp.answerTo(request.requestId)),
    );
    expect([first?.type, second?.type, errorCode(first), errorCode(second)]).toEqual([
      "voice.request_result",
      "voice.request_result",
      undefined,
      undefined,
    ]);
    expect(third).toMatchObject({ error: { code: "TOO_MANY_PENDING_RUNS" } });
    const before = await registeredState(world.t, device);
    expect(before.pending).toBe(2);

    lamp.answers.delete(requests[0]!.requestId);
    lamp.send(requests[0]);
    expect(await lamp.answerTo(requests[0]!.requestId)).toMatchObject({ runId: first?.runId });
    const fourth = voiceRequest();
    lamp.send(fourth);
    expect(await lamp.answerTo(fourth.requestId)).toMatchObject({ error: { code: "TOO_MANY_PENDING_RUNS" } });
    expect(await registeredState(world.t, device)).toEqual(before);
    lamp.socket.close();
  });
});

describe("device limits: repeats waiting to be spoken (PLAYBACK_MAX_QUEUED_REPEATS=3)", () => {
  const world = useGateway("limits-repeats", { PLAYBACK_MAX_QUEUED_REPEATS: "3" });

  it("a fourth queued repeat is TOO_MANY_REPEATS; a repeated request keeps its place; one that started frees one", async () => {
    const deviceId = "lamp-repeats";
    const { t } = world;
    const device = new OsDeviceKeys(t.keys, deviceId);
    await storeRepeatableResult(t, deviceId);
    const lamp = await connect(world.services, deviceId);
    const repeat = (requestId: string = randomUUID()) => {
      lamp.answers.delete(requestId);
      lamp.send({ type: "playback.repeat", requestId, resultId: "r-1" });
      return lamp.answerTo(requestId);
    };
    const accepted = [await repeat(), await repeat(), await repeat()];
    expect(accepted.map((answer) => answer.type)).toEqual(Array(3).fill("playback.repeat_result"));
    expect(await repeat()).toMatchObject({ error: { code: "TOO_MANY_REPEATS" } });
    const again = await repeat(String(accepted[0]?.requestId));
    expect(again).toMatchObject({ type: "playback.repeat_result", playbackId: accepted[0]?.playbackId });

    // The tts-dispatcher queues the first one and the Lamp starts it: it leaves the line and gives its place back.
    const store = new PlaybackStore(t.redis, t.keys, 60_000);
    const playbackId = String(accepted[0]?.playbackId);
    const queued = { deviceId, playbackId, resultKey: "originating-instance|r-1", resultId: "r-1" };
    await store.createRepeat(
      { ...queued, state: "queued", voiceTargetId: "kitchen", text: "hi" },
      Date.now(),
    );
    await store.ack(deviceId, playbackId, "started", Date.now());
    expect(await repeat()).toMatchObject({ type: "playback.repeat_result" });
    expect(await repeat()).toMatchObject({ error: { code: "TOO_MANY_REPEATS" } });
    expect(await t.redis.zcard(device.repeatsAccepted)).toBe(3);
    lamp.socket.close();
  });
});

describe("device limits: frames queued behind a slow answer when the socket closes", () => {
  // The first voice.request waits RECEIPT_WAIT_MS for a receipt no router sends; the rest queue behind it.
  const world = useGateway("limits-closed", { LAMP_RATE_LIMIT_BURST: "1000", RECEIPT_WAIT_MS: "1500" });

  it("are dropped unanswered and never registered", async () => {
    const device = "lamp-gone";
    const lamp = await connect(world.services, device);
    const requests = Array.from({ length: 20 }, () => voiceRequest());
    for (const request of requests) lamp.send(request);
    lamp.socket.terminate();
    const dropped = await waitFor(
      () => droppedFrames(world.services.url),
      (count) => count === requests.length - 1,
    );
    expect(dropped).toBe(requests.length - 1);
    const state = await registeredState(world.t, device);
    expect({ runs: state.runs.length, commands: state.commands }).toEqual({ runs: 1, commands: 1 });
  });
});

/** `os_lamp_frames_total{result="dropped_closed"}` summed over frame types. */
async function droppedFrames(baseUrl: string): Promise<number> {
  const text = await (await fetch(`${baseUrl}/metrics`)).text();
  return text
    .split("\n")
    .filter((line) => line.startsWith("os_lamp_frames_total{") && line.includes('result="dropped_closed"'))
    .reduce((total, line) => total + Number(line.split(" ").at(-1)), 0);
}
