import { randomUUID } from "node:crypto";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import WebSocket from "ws";
import { z } from "zod";
import { MAX_PROMPT_BYTES } from "../../libs/contract/harness-wire.js";
import { TOO_MANY_SOCKETS_CLOSE_CODE } from "../../services/device-gateway/lamp-connections.js";
import { waitFor } from "../helpers/test-redis.js";
import { AGENT, MACHINE, SingleProcessStack } from "./single-process-stack.js";

const MAX_SOCKETS = 4;
/** One Lamp's flood of 16 KiB voice.requests: 48 MiB offered at 1,000 frames a second. */
const FLOOD_FRAMES = 3_000;
const FRAMES_PER_SECOND = 1_000;
/** What the gateway process may grow by while one socket floods it (docs/reliability.md). */
const RSS_GROWTH_BOUND_BYTES = 32 * 1024 * 1024;
/** The flooding Lamp holds a frame back while this much of its output waits unsent (TCP pushed back). */
const CLIENT_BUFFER_BYTES = 1024 * 1024;

let stack: SingleProcessStack;
beforeAll(async () => {
  stack = await SingleProcessStack.start("socket-limits", {
    LOG_LEVEL: "warn",
    LAMP_MAX_SOCKETS_PER_DEVICE: String(MAX_SOCKETS),
    // Past its burst the flood is refused (RATE_LIMITED) rather than run: the test is about reading, not engines.
    LAMP_RATE_LIMIT_PER_SECOND: "0.01",
  });
}, 120_000);
afterAll(() => stack?.stop());

function openSocket(url: string, token: string): Promise<WebSocket> {
  const socket = new WebSocket(url, { headers: { authorization: `Bearer ${token}` } });
  socket.on("error", () => undefined);
  return new Promise((resolve, reject) => {
    socket.once("open", () => resolve(socket));
    socket.once("unexpected-response", (_request, response) =>
      reject(new Error(`upgrade refused: ${response.statusCode}`)),
    );
  });
}

const voiceRequest = (requestId: string, text: string) =>
  JSON.stringify({
    type: "voice.request",
    requestId,
    agentId: AGENT,
    machineId: MACHINE,
    text,
    voiceTarget: { id: "target-1" },
    replyRoute: "voice",
  });

describe("Lamp socket limits per device", () => {
  it("closes a device's socket beyond the cap with 4003 and keeps the device's other sockets working", async () => {
    const lamps = await Promise.all(Array.from({ length: MAX_SOCKETS }, () => stack.lamp("lamp-capped")));
    const extra = await openSocket(stack.lampUrl, await stack.token("lamp-capped"));
    const closed = await new Promise<number>((resolve) => extra.once("close", (code) => resolve(code)));
    expect(closed).toBe(TOO_MANY_SOCKETS_CLOSE_CODE);
    expect(await stack.metric("os_lamp_sockets_refused_total", { reason: "too_many_sockets" })).toBe(1);

    const runs = await Promise.all(
      lamps.map((lamp, index) => lamp.say({ agentId: AGENT, machineId: MACHINE, text: `Socket ${index}.` })),
    );
    expect(new Set(runs.map((run) => run.runId)).size).toBe(MAX_SOCKETS);
    expect(lamps.filter((lamp) => lamp.closed)).toHaveLength(0);
  });

  it("stops reading a flooding socket: the gateway's memory stays bounded and every frame sent is answered", async () => {
    const socket = await openSocket(stack.lampUrl, await stack.token("lamp-flood"));
    const answered = new Set<string>();
    socket.on("message", (data) => {
      const frame = z
        .looseObject({ type: z.string(), requestId: z.string() })
        .safeParse(JSON.parse(data.toString()));
      if (frame.success && frame.data.type === "voice.request_result") answered.add(frame.data.requestId);
    });
    const text = "a".repeat(MAX_PROMPT_BYTES);
    const rssBefore = stack.rssBytes();
    let rssPeak = rssBefore;
    let sent = 0;
    let heldBack = 0;
    const started = Date.now();
    // Offered at FRAMES_PER_SECOND; what the Lamp's TCP connection does not take stays with the Lamp.
    const flood = setInterval(() => {
      const due = Math.min(FLOOD_FRAMES, Math.floor(((Date.now() - started) * FRAMES_PER_SECOND) / 1000));
      for (; sent < due; sent += 1) {
        if (socket.bufferedAmount >= CLIENT_BUFFER_BYTES) {
          heldBack += 1;
          break;
        }
        socket.send(voiceRequest(randomUUID(), text));
      }
      if (sent === FLOOD_FRAMES) clearInterval(flood);
    }, 10);
    const drained = await waitFor(
      () => {
        rssPeak = Math.max(rssPeak, stack.rssBytes());
        return answered.size;
      },
      (count) => count === FLOOD_FRAMES,
      { timeoutMs: 150_000, intervalMs: 50 },
    );
    clearInterval(flood);
    expect(drained).toBe(FLOOD_FRAMES);
    expect(heldBack).toBeGreaterThan(0);
    expect(rssPeak - rssBefore).toBeLessThan(RSS_GROWTH_BOUND_BYTES);
    socket.close();
  }, 180_000);
});
