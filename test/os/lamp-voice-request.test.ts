import { STREAM_CATALOG } from "../../libs/contract/catalog.js";
import { randomUUID } from "node:crypto";
import { afterEach, beforeEach, describe, expect, it, vi } from "vitest";
import WebSocket from "ws";
import { z } from "zod";
import { NamedLuaScript } from "../../libs/redis/lua-script.js";
import { LAMP_GATEWAY_HEARTBEAT_MS } from "../../libs/contract/lamp-delivery.js";
import { OsDeviceKeys, OsPartitionKeys } from "../../libs/os-store/os-keys.js";
import { hostServices, type HostedServices } from "../../libs/service/service-host.js";
import { appendToStream } from "../../libs/streams/stream-writer.js";
import { deviceGatewayService } from "../../services/device-gateway/definition.js";
import { routerService } from "../../services/router/definition.js";
import { RunRegistration } from "../../services/device-gateway/run-registration.js";
import { runResolverService } from "../../services/run-resolver/definition.js";
import { createTestRedis, waitFor, type TestRedis } from "../helpers/test-redis.js";
import { ScriptedHarnessPeer } from "./harness-peer.js";
import {
  AGENT,
  HARNESS_SECRET,
  osToken,
  MACHINE,
  osEnv,
  pushAndSettle,
  resultEvent,
  runOf,
  storeRepeatableResult,
  voiceRequestFrame,
} from "./os-fixture.js";
import { sleep } from "../../libs/timing/sleep.js";

const DEVICE = "lamp-voice";
/** The run-update include driven directly (libs/os-store/test-lua): one append and its notice. */
const emittedSchema = z.object({}).strict();
const emitRunUpdate = NamedLuaScript.fromFile<
  { runId: string; change: string; reason?: string; now: number },
  typeof emittedSchema
>(new URL("../../libs/os-store/test-lua/emit-run-update-1.lua", import.meta.url), emittedSchema);
const GATEWAY = "gateway-test";
let t: TestRedis;
let peer: ScriptedHarnessPeer;
let services: HostedServices;
const sockets: WebSocket[] = [];

/** A Lamp over the real WebSocket that collects every frame the OS sends it. */
async function connectLamp(token: string) {
  const socket = new WebSocket(`${services.url.replace("http", "ws")}/v1/lamp/ws`, {
    headers: { authorization: `Bearer ${token}` },
  });
  sockets.push(socket);
  const frames: Record<string, unknown>[] = [];
  socket.on("message", (data) => frames.push(JSON.parse(data.toString()) as Record<string, unknown>));
  await new Promise((resolve, reject) => {
    socket.once("open", resolve);
    socket.once("error", reject);
  });
  // run.update frames carry the requestId of the voice.request they are about; answers are `<op>_result`.
  const answersTo = (requestId: string) =>
    frames.filter((frame) => frame.requestId === requestId && String(frame.type).endsWith("_result"));
  const answerTo = async (requestId: string) => {
    const found = await waitFor(
      () => answersTo(requestId)[0],
      (frame) => frame !== undefined,
    );
    if (!found) throw new Error(`no answer to ${requestId}`);
    return found;
  };
  return {
    socket,
    frames,
    answerTo,
    answersTo,
    send: (frame: unknown) => socket.send(JSON.stringify(frame)),
  };
}

beforeEach(async () => {
  t = createTestRedis("lamp");
  peer = await ScriptedHarnessPeer.start(HARNESS_SECRET);
  services = await hostServices(
    "test",
    [deviceGatewayService, routerService, runResolverService],
    osEnv(t, peer, { GATEWAY_INSTANCE_ID: GATEWAY, LAMP_PRESENCE_TTL_MS: "900" }),
  );
});

afterEach(async () => {
  vi.restoreAllMocks();
  for (const socket of sockets.splice(0)) socket.close();
  await services.stop();
  await peer.close();
  await t.cleanup();
});

describe("device-gateway: voice.request over the real Lamp WebSocket", () => {
  it("registers the run, sends exactly one turn.send with its key, and answers with the Harness receipt", async () => {
    const lamp = await connectLamp(await osToken(DEVICE));
    const requestId = randomUUID();
    lamp.send(voiceRequestFrame(requestId));
    const answer = await lamp.answerTo(requestId);
    expect(answer).toMatchObject({ type: "voice.request_result", requestId });
    const runId = String(answer.runId);
    const key = String(answer.idempotencyKey);
    const sends = peer.framesOf(DEVICE, "turn.send");
    expect(sends).toHaveLength(1);
    expect(sends[0]).toMatchObject({
      idempotencyKey: key,
      agentId: AGENT,
      machineId: MACHINE,
      text: "build a house",
    });
    expect(answer.receipt).toMatchObject({
      idempotencyKey: key,
      deliveryId: `delivery-${key}`,
      state: "queued",
    });
    expect(await runOf(t, DEVICE, runId)).toMatchObject({
      state: "pending",
      idempotencyKey: key,
      deliveryId: `delivery-${key}`,
      serverInstanceId: "originating-instance",
      voiceTargetId: "kitchen",
      replyRoute: "voice",
    });

    const repeatId = randomUUID();
    lamp.send({ ...voiceRequestFrame(requestId), requestId });
    lamp.send(voiceRequestFrame(repeatId, "   "));
    const repeated = await waitFor(
      () => lamp.answersTo(requestId),
      (frames) => frames.length === 2,
    );
    expect(repeated[1]).toMatchObject({
      runId,
      idempotencyKey: key,
      receipt: { deliveryId: `delivery-${key}` },
    });
    expect(await lamp.answerTo(repeatId)).toMatchObject({ error: { code: "INVALID_REQUEST" } });
    expect(peer.framesOf(DEVICE, "turn.send")).toHaveLength(1);
  });

  it("a store failure registers nothing, sends nothing and answers UNAVAILABLE; the retry then succeeds", async () => {
    const lamp = await connectLamp(await osToken(DEVICE));
    const device = new OsDeviceKeys(t.keys, DEVICE);
    await t.redis.set(device.commands, "damaged");
    const requestId = randomUUID();
    lamp.send(voiceRequestFrame(requestId));
    expect(await lamp.answerTo(requestId)).toMatchObject({
      type: "voice.request_result",
      requestId,
      error: { code: "UNAVAILABLE" },
    });
    expect(await t.redis.exists(device.request(requestId), device.runs, device.pendingRuns)).toBe(0);

    await t.redis.del(device.commands);
    lamp.send(voiceRequestFrame(requestId));
    await waitFor(
      () => lamp.answersTo(requestId).length,
      (n) => n === 2,
    );
    expect(lamp.answersTo(requestId)[1]).toMatchObject({
      type: "voice.request_result",
      receipt: { state: "queued" },
    });
    expect(peer.framesOf(DEVICE, "turn.send")).toHaveLength(1);
  });

  it("a Lamp whose registration failed (its active-set write refused) is registered once Redis answers again", async () => {
    const activeSet = OsPartitionKeys.ofDevice(t.keys, DEVICE, t.keys.partitions).devices;
    await t.redis.set(activeSet, "damaged");
    const lamp = await connectLamp(await osToken(DEVICE));
    const presence = await waitFor(
      () => t.redis.get(new OsDeviceKeys(t.keys, DEVICE).lampPresence),
      (holder) => holder === GATEWAY,
    );
    expect(presence).toBe(GATEWAY);
    expect(peer.connected(DEVICE)).toBe(false);

    await t.redis.del(activeSet);
    await peer.untilConnected(DEVICE);
    expect(await t.redis.smembers(activeSet)).toEqual([DEVICE]);
    const connected = await waitFor(
      () => t.redis.xrange(t.keys.stream(STREAM_CATALOG.lampEvents.name), "-", "+"),
      (entries) => entries.length > 0,
    );
    expect(connected.map(([, fields]) => JSON.parse(fields[1] ?? "{}"))).toMatchObject([
      { kind: "lamp.connected", deviceId: DEVICE, gatewayId: GATEWAY },
    ]);
    expect(lamp.socket.readyState).toBe(WebSocket.OPEN);
  });

  it("run.updates reach the Lamp once each and in order, from the notices, and from the log where a notice was lost", async () => {
    const lamp = await connectLamp(await osToken(DEVICE));
    const device = new OsDeviceKeys(t.keys, DEVICE);
    const requestId = randomUUID();
    await t.redis.hset(device.run("run-feed"), {
      runId: "run-feed",
      deviceId: DEVICE,
      requestId,
      state: "pending",
    });
    const updates = () => lamp.frames.filter((frame) => frame.type === "run.update");
    await emitRunUpdate.run(t.redis, [device.base], { runId: "run-feed", change: "receipt", now: 1_000 });
    await waitFor(updates, (frames) => frames.length === 1);
    // An append whose notice never came: only the log has it.
    const silent = { runId: "run-feed", requestId, state: "pending", change: "cancelled", at: 2_000 };
    await t.redis.xadd(device.runUpdates, "0-*", "payload", JSON.stringify(silent));
    await emitRunUpdate.run(t.redis, [device.base], {
      runId: "run-feed",
      change: "unknown",
      reason: "ENGINE_EXITED",
      now: 3_000,
    });
    await waitFor(updates, (frames) => frames.length === 3);
    expect(updates()).toMatchObject([
      { updateId: 1, change: "receipt", requestId },
      { updateId: 2, change: "cancelled", requestId },
      { updateId: 3, change: "unknown", reason: "ENGINE_EXITED", requestId },
    ]);
    await emitRunUpdate.run(t.redis, [device.base], {
      runId: "run-feed",
      change: "playback",
      reason: "ack_timeout",
      now: 4_000,
    });
    await waitFor(updates, (frames) => frames.length === 4);
    expect(updates().map((frame) => frame.updateId)).toEqual([1, 2, 3, 4]);
  });

  it("a minted idempotency key that is already taken answers IDEMPOTENCY_KEY_IN_USE, registers nothing; the retry succeeds", async () => {
    const lamp = await connectLamp(await osToken(DEVICE));
    const firstId = randomUUID();
    lamp.send(voiceRequestFrame(firstId));
    const takenKey = String((await lamp.answerTo(firstId)).idempotencyKey);
    vi.spyOn(RunRegistration.prototype, "newIdempotencyKey").mockReturnValueOnce(takenKey);

    const requestId = randomUUID();
    lamp.send(voiceRequestFrame(requestId, "another question"));
    const answer = await lamp.answerTo(requestId);
    expect(answer).toMatchObject({ type: "voice.request_result", error: { code: "IDEMPOTENCY_KEY_IN_USE" } });
    expect(JSON.stringify(answer)).not.toContain("requestId was already used");
    const device = new OsDeviceKeys(t.keys, DEVICE);
    expect(await t.redis.exists(device.request(requestId))).toBe(0);
    expect(await t.redis.zcard(device.runs)).toBe(1);

    lamp.send(voiceRequestFrame(requestId, "another question"));
    await waitFor(
      () => lamp.answersTo(requestId).length,
      (n) => n === 2,
    );
    const retried = lamp.answersTo(requestId)[1];
    expect(retried).toMatchObject({ type: "voice.request_result", receipt: { state: "queued" } });
    expect(retried?.idempotencyKey).not.toBe(takenKey);
    expect(peer.framesOf(DEVICE, "turn.send")).toHaveLength(2);
  });

  it("refuses the upgrade with 401 without a valid device token", async () => {
    const refused = await new Promise<number>((resolve) => {
      const socket = new WebSocket(`${services.url.replace("http", "ws")}/v1/lamp/ws`, {
        headers: { authorization: "Bearer not-a-token" },
      });
      socket.on("unexpected-response", (_request, response) => resolve(response.statusCode ?? 0));
      socket.on("open", () => resolve(101));
    });
    expect(refused).toBe(401);
  });

  it("revoking a device closes its Lamp sockets and refuses its older tokens at the Lamp WebSocket and the OS API", async () => {
    const deviceToken = await osToken(DEVICE);
    const lamp = await connectLamp(deviceToken);
    const closed = new Promise<number>((resolve) => lamp.socket.once("close", resolve));
    const revoke = (token: string) =>
      fetch(`${services.url}/v1/lamp/devices/${DEVICE}`, {
        method: "DELETE",
        headers: { authorization: `Bearer ${token}` },
      });
    expect((await revoke(deviceToken)).status).toBe(403);
    const answer = await revoke(await osToken("ops", "operator"));
    expect(answer.status).toBe(200);
    const { revokedAt } = (await answer.json()) as { revokedAt: string };
    expect(await closed).toBe(4001);

    const upgradeStatus = (token: string) =>
      new Promise<number>((resolve) => {
        const socket = new WebSocket(`${services.url.replace("http", "ws")}/v1/lamp/ws`, {
          headers: { authorization: `Bearer ${token}` },
        });
        sockets.push(socket);
        socket.on("error", () => undefined); // a refused upgrade is closed before it was established
        socket.on("unexpected-response", (_request, response) => resolve(response.statusCode ?? 0));
        socket.on("open", () => resolve(101));
      });
    const runs = (token: string) =>
      fetch(`${services.url}/v1/runs`, { headers: { authorization: `Bearer ${token}` } });
    expect(await upgradeStatus(deviceToken)).toBe(401);
    const refused = await runs(deviceToken);
    expect(refused.status).toBe(401);
    expect(await refused.json()).toMatchObject({ error: { code: "REVOKED" } });

    // Tokens carry whole seconds: one issued in a later second than the revocation is accepted again.
    const nextSecond = (Math.floor(Date.parse(revokedAt) / 1000) + 1) * 1000;
    // A timer may fire a millisecond early against Date.now(), so wait on the wall clock itself.
    while (Date.now() < nextSecond) await sleep(20);
    const newToken = await osToken(DEVICE);
    expect(await upgradeStatus(newToken)).toBe(101);
    expect((await runs(newToken)).status).toBe(200);
  });

  it("a revocation whose notice was missed (the gateway's subscription was away) closes the socket once it is back", async () => {
    const lamp = await connectLamp(await osToken(DEVICE));
    const closed = new Promise<number>((resolve) => lamp.socket.once("close", resolve));
    // Recorded as revokeLamp records it, but without the notice: as if it was published while nobody listened.
    await t.redis.set(new OsDeviceKeys(t.keys, DEVICE).revokedAt, String(Date.now() + 1_000));
    // Every gateway's revocation subscriber on this Redis (test files run side by side, each name is the same):
    // each of the others just subscribes again and re-checks.
    const clients = String(await t.redis.client("LIST")).split("\n");
    const ids = clients
      .filter((line) => line.includes(" name=lampline:device-gateway/revocations "))
      .map((line) => /\bid=(\d+)/.exec(line)?.[1] ?? "");
    expect(ids.length, "the gateway's revocation subscriber").toBeGreaterThan(0);
    const killedAt = Date.now();
    for (const id of ids) await t.redis.client("KILL", "ID", id);
    expect(await closed).toBe(4001);
    // Closed by the re-check on reconnect, not by a later periodic pass (presence refreshes every 5 s).
    expect(Date.now() - killedAt).toBeLessThan(2_500);
  });

  it("voice.cancel marks the run and sends one turn.stop; the later result still resolves it, cancellation kept", async () => {
    const lamp = await connectLamp(await osToken(DEVICE));
    const requestId = randomUUID();
    lamp.send(voiceRequestFrame(requestId));
    const { runId, idempotencyKey } = (await lamp.answerTo(requestId)) as {
      runId: string;
      idempotencyKey: string;
    };
    const cancels = [randomUUID(), randomUUID()];
    for (const cancelId of cancels) lamp.send({ type: "voice.cancel", requestId: cancelId, runId });
    for (const cancelId of cancels)
      expect(await lamp.answerTo(cancelId)).toMatchObject({
        type: "voice.cancel_result",
        runId,
        cancelled: true,
      });
    await waitFor(
      () => peer.framesOf(DEVICE, "turn.stop").length,
      (n) => n === 1,
    );
    expect(peer.framesOf(DEVICE, "turn.stop")[0]).toMatchObject({ agentId: AGENT, machineId: MACHINE });
    await pushAndSettle(
      t,
      peer,
      services.url,
      DEVICE,
      resultEvent({
        resultId: "r-cancelled",
        outcome: "cancelled",
        members: [[`delivery-${idempotencyKey}`, idempotencyKey]],
      }),
    );
    const run = await runOf(t, DEVICE, runId);
    expect(run).toMatchObject({ state: "resolved", outcome: "cancelled", resultId: "r-cancelled" });
    expect(run?.cancelledAt).toBeGreaterThan(0);
  });

  it("delivers playback.start to the Lamp, forwards acks, and answers playback.repeat for own results only", async () => {
    const lamp = await connectLamp(await osToken(DEVICE));
    await waitFor(
      () => t.redis.get(new OsDeviceKeys(t.keys, DEVICE).lampPresence),
      (holder) => holder === GATEWAY,
    );
    const frame = {
      type: "playback.start" as const,
      playbackId: "p-1",
      resultId: "r-1",
      voiceTargetId: "kitchen",
      text: "hi",
    };
    await appendToStream(t.redis, t.keys, STREAM_CATALOG.lampDelivery(GATEWAY), {
      deviceId: DEVICE,
      frame,
      sentAt: Date.now(),
    });
    await waitFor(() => lamp.frames.some((f) => f.type === "playback.start"), Boolean);
    expect(lamp.frames.find((f) => f.type === "playback.start")).toEqual(frame);

    lamp.send({ type: "playback.ack", playbackId: "p-1", state: "started" });
    const missing = randomUUID();
    lamp.send({ type: "playback.repeat", requestId: missing, resultId: "r-unknown" });
    expect(await lamp.answerTo(missing)).toMatchObject({ error: { code: "NOT_FOUND" } });
    await storeRepeatableResult(t, DEVICE);
    const repeat = randomUUID();
    lamp.send({ type: "playback.repeat", requestId: repeat, resultId: "r-1" });
    const repeated = await lamp.answerTo(repeat);
    expect(repeated).toMatchObject({ type: "playback.repeat_result", requestId: repeat });
    const events = await t.redis.xrange(t.keys.stream(STREAM_CATALOG.lampEvents.name), "-", "+");
    expect(events.map(([, fields]) => JSON.parse(fields[1] ?? "{}"))).toMatchObject([
      { kind: "lamp.connected", deviceId: DEVICE, gatewayId: GATEWAY },
      { kind: "playback.ack", deviceId: DEVICE, playbackId: "p-1", state: "started" },
      {
        kind: "playback.repeat",
        deviceId: DEVICE,
        requestId: repeat,
        resultId: "r-1",
        playbackId: repeated.playbackId,
      },
    ]);

    lamp.socket.close();
    await waitFor(
      () => t.redis.get(new OsDeviceKeys(t.keys, DEVICE).lampPresence),
      (holder) => holder === null,
    );
    expect(await t.redis.get(new OsDeviceKeys(t.keys, DEVICE).lampPresence)).toBeNull();
  });

  it("keeps a heartbeat of its instance while it runs (TTL of three beats) and removes it when it stops", async () => {
    const alive = t.keys.lampGatewayAlive(GATEWAY);
    await sleep(100); // let the TTL run down from its last beat
    const ttl = await t.redis.pttl(alive);
    expect(ttl).toBeGreaterThan(0);
    expect(ttl).toBeLessThan(3 * LAMP_GATEWAY_HEARTBEAT_MS);
    // The next beat renews it.
    expect(
      await waitFor(
        () => t.redis.pttl(alive),
        (renewed) => renewed > ttl,
      ),
    ).toBeGreaterThan(ttl);
    await services.stop();
    expect(await t.redis.exists(alive)).toBe(0);
  });

  it("the OS API shows a device its own runs and results, 404 for unknown ids, and needs a token", async () => {
    const token = await osToken(DEVICE);
    const lamp = await connectLamp(token);
    const requestId = randomUUID();
    lamp.send(voiceRequestFrame(requestId));
    const { runId, idempotencyKey } = (await lamp.answerTo(requestId)) as {
      runId: string;
      idempotencyKey: string;
    };
    await pushAndSettle(
      t,
      peer,
      services.url,
      DEVICE,
      resultEvent({
        resultId: "r-api",
        fullText: "The **house** is built.",
        members: [[`delivery-${idempotencyKey}`, idempotencyKey]],
      }),
    );
    const get = (path: string, bearer = token) =>
      fetch(`${services.url}${path}`, { headers: { authorization: `Bearer ${bearer}` } });
    expect(await (await get(`/v1/runs/${runId}`)).json()).toMatchObject({
      runId,
      state: "resolved",
      outcome: "completed",
      resultId: "r-api",
      idempotencyKey,
      deliveryId: `delivery-${idempotencyKey}`,
      agentId: AGENT,
      voiceTarget: { id: "kitchen" },
      replyRoute: "voice",
    });
    expect(await (await get("/v1/results/r-api")).json()).toMatchObject({
      resultId: "r-api",
      deviceId: DEVICE,
      serverInstanceId: "originating-instance",
      outcome: "completed",
      fullText: "The **house** is built.",
      members: [{ runId, deliveryId: `delivery-${idempotencyKey}`, idempotencyKey }],
    });
    expect(await get("/v1/runs?state=resolved").then((r) => r.json())).toMatchObject({ runs: [{ runId }] });
    expect(await get("/v1/runs?state=pending").then((r) => r.json())).toEqual({ deviceId: DEVICE, runs: [] });
    expect((await get("/v1/runs/nope")).status).toBe(404);
    expect((await get("/v1/results/nope")).status).toBe(404);
    expect((await get("/v1/runs?state=weird")).status).toBe(400);
    expect((await get("/v1/runs?deviceId=lamp-other")).status).toBe(403);
    expect(await get("/v1/rejections").then((r) => r.json())).toEqual({ deviceId: DEVICE, rejections: [] });
    expect(await get("/v1/held-results").then((r) => r.json())).toEqual({
      deviceId: DEVICE,
      heldResults: [],
    });
    expect(await get("/v1/protocol-errors").then((r) => r.json())).toEqual({
      deviceId: DEVICE,
      protocolErrors: [],
    });
    expect((await fetch(`${services.url}/v1/runs`)).status).toBe(401);
    const other = await osToken("lamp-other");
    expect((await get(`/v1/runs/${runId}`, other)).status).toBe(404);
    const operator = await osToken("ops", "operator");
    expect((await get(`/v1/runs/${runId}?deviceId=${DEVICE}`, operator)).status).toBe(200);
  });
});
