import { randomUUID } from "node:crypto";
import { mkdtempSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterEach, describe, expect, it } from "vitest";
import WebSocket from "ws";
import { STREAMS } from "../../libs/contract/streams.js";
import { freePort } from "../../libs/redis/redis-server-process.js";
import { hostServices, type HostedServices } from "../../libs/service/service-host.js";
import { deviceGatewayService } from "../../services/device-gateway/definition.js";
import { harnessGatewayService } from "../../services/harness-gateway/definition.js";
import { routerService } from "../../services/router/definition.js";
import { runResolverService } from "../../services/run-resolver/definition.js";
import { createTestRedis, waitFor, type TestRedis } from "../helpers/test-redis.js";
import { AGENT, HARNESS_SECRET, JWT_SECRET, MACHINE, osToken, runOf } from "./os-fixture.js";

const DEVICE = "lamp-real-harness";
let t: TestRedis;
let services: HostedServices | undefined;
let lamp: WebSocket | undefined;

afterEach(async () => {
  lamp?.close();
  await services?.stop();
  await t.cleanup();
});

describe("router against the real harness-gateway", () => {
  it("voice.request reaches the Harness once: reservation, dispatch and the receipt bound to the run", async () => {
    t = createTestRedis("realharness");
    const port = await freePort();
    const agentsFile = join(mkdtempSync(join(tmpdir(), "agents-")), "agents.json");
    writeFileSync(
      agentsFile,
      JSON.stringify([
        { agentId: AGENT, machineId: MACHINE, engine: "claude-stream-json", command: ["true"] },
      ]),
    );
    services = await hostServices(
      "test",
      [harnessGatewayService, runResolverService, routerService, deviceGatewayService],
      {
        REDIS_URL: t.url,
        KEY_PREFIX: t.keys.prefix,
        PORT: String(port),
        LOG_LEVEL: "silent",
        AUTH_JWT_SECRET: JWT_SECRET,
        HARNESS_JWT_SECRET: HARNESS_SECRET,
        AGENTS_FILE: agentsFile,
        HARNESS_MACHINE_ID: MACHINE,
        HARNESS_URL: `ws://127.0.0.1:${port}/v1/harness/ws`,
        ROUTER_LEASE_TTL_MS: "1500",
      },
    );
    lamp = new WebSocket(`ws://127.0.0.1:${port}/v1/lamp/ws`, {
      headers: { authorization: `Bearer ${await osToken(DEVICE)}` },
    });
    const frames: Record<string, unknown>[] = [];
    lamp.on("message", (data) => frames.push(JSON.parse(data.toString()) as Record<string, unknown>));
    await new Promise((resolve) => lamp?.once("open", resolve));
    const requestId = randomUUID();
    lamp.send(
      JSON.stringify({
        type: "voice.request",
        requestId,
        agentId: AGENT,
        machineId: MACHINE,
        text: "build a house",
        voiceTarget: { id: "kitchen" },
        replyRoute: "voice",
      }),
    );
    const answer = await waitFor(
      // run.update frames name the requestId too; the answer is the `_result` frame.
      () => frames.find((frame) => frame.requestId === requestId && frame.type === "voice.request_result"),
      (frame) => frame !== undefined,
    );
    expect(answer).toMatchObject({ type: "voice.request_result", receipt: { state: expect.any(String) } });
    const { runId, idempotencyKey } = answer as { runId: string; idempotencyKey: string };
    const dispatched = await waitFor(
      () => t.redis.xrange(t.keys.stream(STREAMS.harnessDispatch.name), "-", "+"),
      (entries) => entries.length > 0,
    );
    const inputs = dispatched.map(([, fields]) => JSON.parse(fields[1] ?? "{}") as Record<string, unknown>);
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
});
