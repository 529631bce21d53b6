import { STREAM_CATALOG } from "../../libs/contract/catalog.js";
import { randomUUID } from "node:crypto";
import { mkdtempSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterEach, describe, expect, it } from "vitest";
import WebSocket from "ws";
import { signToken } from "../../libs/auth/tokens.js";

import { HarnessDeviceKeys } from "../../libs/harness-store/harness-keys.js";
import { OsDeviceKeys } from "../../libs/os-store/os-keys.js";
import { partitionOf } from "../../libs/redis/partitions.js";
import { freePort } from "../../libs/redis/redis-server-process.js";
import { hostServices, type HostedServices } from "../../libs/service/service-host.js";
import { deviceGatewayService } from "../../services/device-gateway/definition.js";
import { harnessGatewayService } from "../../services/harness-gateway/definition.js";
import { routerService } from "../../services/router/definition.js";
import { runResolverService } from "../../services/run-resolver/definition.js";
import { createTestRedis, waitFor, type TestRedis } from "../helpers/test-redis.js";
import {
  AGENT,
  HARNESS_SECRET,
  JWT_SECRET,
  MACHINE,
  osToken,
  runOf,
  voiceRequestFrame,
} from "./os-fixture.js";
import { sampleValue } from "../helpers/metrics-text.js";

const DEVICE = "lamp-real-harness";
const BYSTANDER = "lamp-bystander";
let t: TestRedis;
let services: HostedServices | undefined;
const lamps: WebSocket[] = [];

afterEach(async () => {
  for (const lamp of lamps.splice(0)) lamp.close();
  await services?.stop();
  await t.cleanup();
});

/** The OS (device-gateway, router, run-resolver) and the real harness-gateway in one process, on one port. */
async function startOsAndHarness(): Promise<number> {
  t = createTestRedis("realharness");
  const port = await freePort();
  const agentsFile = join(mkdtempSync(join(tmpdir(), "agents-")), "agents.json");
  writeFileSync(
    agentsFile,
    JSON.stringify([{ agentId: AGENT, machineId: MACHINE, engine: "claude-stream-json", command: ["true"] }]),
  );
  services = await hostServices(
    "test",
    [harnessGatewayService, runResolverService, routerService, deviceGatewayService],
    {
      REDIS_URL: t.url,
      KEY_PREFIX: t.keys.prefix,
      STREAM_PARTITIONS: String(t.keys.partitions),
      PORT: String(port),
      LOG_LEVEL: "silent",
      AUTH_JWT_SECRET: JWT_SECRET,
      HARNESS_JWT_SECRET: HARNESS_SECRET,
      AGENTS_FILE: agentsFile,
      HARNESS_MACHINE_ID: MACHINE,
      HARNESS_URL: `ws://127.0.0.1:${port}/v1/harness/ws`,
      ROUTER_LEASE_TTL_MS: "1500",
      HARNESS_RECONNECT_MS: "100",
    },
  );
  return port;
}

interface OpenLamp {
  socket: WebSocket;
  frames: Record<string, unknown>[];
}

async function openLamp(port: number, token: string): Promise<OpenLamp> {
  const socket = new WebSocket(`ws://127.0.0.1:${port}/v1/lamp/ws`, {
    headers: { authorization: `Bearer ${token}` },
  });
  lamps.push(socket);
  const frames: Record<string, unknown>[] = [];
  socket.on("message", (data) => frames.push(JSON.parse(data.toString()) as Record<string, unknown>));
  await new Promise((resolve) => socket.once("open", resolve));
  return { socket, frames };
}

/** Sends a voice.request and returns its `_result` frame (run.update frames name the requestId too). */
async function askLamp(lamp: OpenLamp, text: string): Promise<{ runId: string; idempotencyKey: string }> {
  const requestId = randomUUID();
  lamp.socket.send(JSON.stringify(voiceRequestFrame(requestId, text)));
  const answer = await waitFor(
    () => lamp.frames.find((frame) => frame.requestId === requestId && frame.type === "voice.request_result"),
    (frame) => frame !== undefined,
  );
  expect(answer).toMatchObject({ type: "voice.request_result", receipt: { state: expect.any(String) } });
  return answer as unknown as { runId: string; idempotencyKey: string };
}

/** Every input the Harness dispatched toward an engine, in order. */
async function dispatchedInputs(): Promise<Record<string, unknown>[]> {
  const entries = await t.redis.xrange(
    t.keys.stream(STREAM_CATALOG.harnessDispatch.name, partitionOf(AGENT, t.keys.partitions)),
    "-",
    "+",
  );
  return entries.map(([, fields]) => JSON.parse(fields[1] ?? "{}") as Record<string, unknown>);
}

/** The harness-gateway's open peer sessions (the router's, here), from its own gauge. */
async function harnessSessions(port: number): Promise<number> {
  const metrics = await (await fetch(`http://127.0.0.1:${port}/metrics`)).text();
  return sampleValue(metrics, "harness_gateway_sessions") ?? 0;
}

const sessionsBecome = (port: number, count: number) =>
  waitFor(
    () => harnessSessions(port),
    (open) => open === count,
  );

/** An upgrade at `/v1/harness/ws`: 101, or the refusal's status and JSON body. */
function harnessUpgrade(port: number, token: string): Promise<{ status: number; body?: unknown }> {
  const socket = new WebSocket(`ws://127.0.0.1:${port}/v1/harness/ws`, {
    headers: { authorization: `Bearer ${token}` },
  });
  return new Promise((resolve) => {
    socket.on("error", () => undefined); // a refused upgrade is closed before it was established
    socket.once("open", () => {
      socket.close();
      resolve({ status: 101 });
    });
    socket.once("unexpected-response", (_request, response) => {
      const chunks: Buffer[] = [];
      response.on("data", (chunk: Buffer) => chunks.push(chunk));
      response.on("end", () =>
        resolve({ status: response.statusCode ?? 0, body: JSON.parse(Buffer.concat(chunks).toString()) }),
      );
    });
  });
}

/**
 * Resolves after the router renewed a device's lease twice more (its PTTL jumps back up each time): each lease
 * round takes a third of the TTL, several times the router's reconnect interval, so a reconnect it meant to make
 * has been made by then.
 */
async function twoLeaseRounds(deviceId: string): Promise<void> {
  const lease = new OsDeviceKeys(t.keys, deviceId).lease;
  for (let round = 0; round < 2; round += 1) {
    let last = await t.redis.pttl(lease);
    await waitFor(
      async () => {
        const ttl = await t.redis.pttl(lease);
        const renewed = ttl > last;
        last = ttl;
        return renewed;
      },
      (renewed) => renewed,
      { intervalMs: 20 },
    );
  }
}

describe("router against the real harness-gateway", () => {
  it("voice.request reaches the Harness once: reservation, dispatch and the receipt bound to the run", async () => {
    const port = await startOsAndHarness();
    const lamp = await openLamp(port, await osToken(DEVICE));
    const { runId, idempotencyKey } = await askLamp(lamp, "build a house");
    const inputs = await waitFor(dispatchedInputs, (entries) => entries.length > 0);
    expect(inputs).toHaveLength(1);
    expect(inputs[0]).toMatchObject({
      kind: "input",
      deviceId: DEVICE,
      idempotencyKey,
      text: "build a house",
    });
    expect(await runOf(t, DEVICE, runId)).toMatchObject({
      state: "pending",
      deliveryId: inputs[0]?.deliveryId,
    });
  });

  it("one OS revocation cuts the device off at the Harness too: old tokens refused there, the router's session closed until the Lamp returns with a newer token, no turn sent meanwhile", async () => {
    const port = await startOsAndHarness();
    const oldLampToken = await osToken(DEVICE);
    const oldHarnessToken = await signToken(HARNESS_SECRET, { audience: "harness", role: "os", sub: DEVICE });
    // Another device's session stays open throughout; its lease rounds are the router's clock below.
    await openLamp(port, await osToken(BYSTANDER));
    const lamp = await openLamp(port, oldLampToken);
    await askLamp(lamp, "first");
    await waitFor(dispatchedInputs, (entries) => entries.length === 1);
    expect(await sessionsBecome(port, 2)).toBe(2);
    // Even before any revocation a Lamp token is no Harness credential.
    expect(await harnessUpgrade(port, oldLampToken)).toMatchObject({
      status: 401,
      body: { error: { code: "UNAUTHORIZED", message: expect.stringContaining("audience") } },
    });

    const closed = new Promise<number>((resolve) => lamp.socket.once("close", resolve));
    const answer = await fetch(`http://127.0.0.1:${port}/v1/lamp/devices/${DEVICE}`, {
      method: "DELETE",
      headers: { authorization: `Bearer ${await osToken("ops", "operator")}` },
    });
    expect(answer.status).toBe(200);
    const revokedAt = Date.parse(((await answer.json()) as { revokedAt: string }).revokedAt);
    expect(await closed).toBe(4001);
    expect(await sessionsBecome(port, 1)).toBe(1);
    expect(Number(await t.redis.get(new HarnessDeviceKeys(t.keys, DEVICE).revokedAt))).toBe(revokedAt);
    expect(await t.redis.exists(new OsDeviceKeys(t.keys, DEVICE).sessionRevoked)).toBe(1);
    expect(await harnessUpgrade(port, oldLampToken)).toMatchObject({ status: 401 });
    expect(await harnessUpgrade(port, oldHarnessToken)).toMatchObject({
      status: 401,
      body: { error: { code: "REVOKED" } },
    });

    // A Lamp token must come from a later second than the revocation; from then on any token the router minted
    // would be accepted, so a session it reopened would show after its next lease rounds.
    await waitFor(
      () => Math.floor(Date.now() / 1000),
      (second) => second > Math.floor(revokedAt / 1000),
    );
    await twoLeaseRounds(BYSTANDER);
    expect(await harnessSessions(port)).toBe(1);
    expect(await dispatchedInputs()).toHaveLength(1);

    const returned = await openLamp(port, await osToken(DEVICE));
    expect(await sessionsBecome(port, 2)).toBe(2);
    const { idempotencyKey } = await askLamp(returned, "second");
    const inputs = await waitFor(dispatchedInputs, (entries) => entries.length === 2);
    expect(inputs.map((input) => input.text)).toEqual(["first", "second"]);
    expect(inputs[1]).toMatchObject({ deviceId: DEVICE, idempotencyKey });
  });
});
