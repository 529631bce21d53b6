import { STREAM_CATALOG } from "../../libs/contract/catalog.js";
import { randomUUID } from "node:crypto";
import WebSocket from "ws";
import { describe, expect, it } from "vitest";
import {
  harnessErrorResultSchema,
  helloResultSchema,
  turnSendResultSchema,
} from "../../libs/contract/harness-wire.js";
import { signToken } from "../../libs/auth/tokens.js";
import { harnessDispatchSchema } from "../../libs/contract/pipeline-payloads.js";
import {
  AGENT,
  HarnessPeer,
  MACHINE,
  HARNESS_SECRET,
  receiptOf,
  storeCounts,
  useHarnessStack,
  wsUrl,
} from "./harness-fixture.js";

const s = useHarnessStack("hgw-requests", {
  RECEIPT_CAPACITY: "3",
  RATE_LIMIT_BURST: "1000",
  RATE_LIMIT_PER_SECOND: "1000",
});

async function dispatched() {
  const entries = await s.t.redis.xrange(s.t.keys.stream(STREAM_CATALOG.harnessDispatch.name), "-", "+");
  return entries.map(([, fields]) => harnessDispatchSchema.parse(JSON.parse(fields[1] as string)));
}

/** The HTTP status a WebSocket upgrade gets (101 when it is accepted). */
function upgradeStatus(headers: Record<string, string>): Promise<number> {
  const socket = new WebSocket(wsUrl(s.harness.url), { headers });
  socket.on("error", () => undefined);
  return new Promise((resolve) => {
    socket.once("unexpected-response", (_request, response) => {
      resolve(response.statusCode ?? 0);
      socket.terminate();
    });
    socket.once("open", () => {
      resolve(101);
      socket.close();
    });
  });
}

describe("harness-gateway authentication", () => {
  it("refuses the upgrade with 401 for a missing, forged or expired token", async () => {
    expect(await upgradeStatus({})).toBe(401);
    expect(await upgradeStatus({ authorization: "Bearer not.a.jwt" })).toBe(401);
    const peerClaims = { audience: "harness", role: "os", sub: "lamp-x" } as const;
    const forged = await signToken("some-other-secret-0123456789abcdef", peerClaims);
    expect(await upgradeStatus({ authorization: `Bearer ${forged}` })).toBe(401);
    const expired = await signToken(HARNESS_SECRET, { ...peerClaims, expiresInSeconds: -10 });
    expect(await upgradeStatus({ authorization: `Bearer ${expired}` })).toBe(401);
    expect(
      await upgradeStatus({ authorization: `Bearer ${await signToken(HARNESS_SECRET, peerClaims)}` }),
    ).toBe(101);
  });
});

describe("harness-gateway hello", () => {
  it("answers hello with machineId, instance, limits and v2 only when the peer asked", async () => {
    const peer = await HarnessPeer.connect(s.harness.url, "lamp-hello");
    const capable = helloResultSchema.parse(await peer.hello(["turn.correlation.v2", "x.other"]));
    expect(capable.machineId).toBe(MACHINE);
    expect(capable.capabilities).toEqual(["turn.correlation.v2"]);
    expect(capable.limits).toMatchObject({
      receiptCapacity: 3,
      maxPromptBytes: 16384,
      maxGroupMembers: 64,
      maxResultPayloadBytes: 32768,
    });
    expect(capable.limits.receiptRetentionSeconds).toBeGreaterThanOrEqual(86_400);
    const legacy = helloResultSchema.parse(await peer.hello([]));
    expect(legacy.capabilities).toEqual([]);
    expect(legacy.serverInstanceId).toBe(capable.serverInstanceId);
    await peer.close();
  });

  it("answers every request before hello with INVALID_REQUEST and changes nothing", async () => {
    const peer = await HarnessPeer.connect(s.harness.url, "lamp-early");
    const answer = await peer.send("early-1");
    expect(harnessErrorResultSchema.parse(answer)).toMatchObject({
      type: "turn.send_result",
      error: { code: "INVALID_REQUEST" },
    });
    expect((await storeCounts(s.t, "lamp-early")).reservations).toBe(0);
    await peer.close();
  });
});

describe("harness-gateway reservations", () => {
  it("reserves before dispatch: accepted once, a same-key resend after a lost ack is a duplicate and is not dispatched again", async () => {
    const peer = await HarnessPeer.connect(s.harness.url, "lamp-dup");
    await peer.hello();
    const before = (await dispatched()).length;
    const first = turnSendResultSchema.parse(await peer.send("key-A", "build a house"));
    expect(first).toMatchObject({
      type: "turn.send_result",
      status: "accepted",
      receipt: {
        state: "queued",
        operation: "turn.send",
        agentId: AGENT,
        machineId: MACHINE,
        turnId: null,
        error: null,
      },
    });
    const resend = turnSendResultSchema.parse(await peer.send("key-A", "build a house"));
    expect(resend.status).toBe("duplicate");
    expect(resend.receipt).toEqual(first.receipt);
    const dispatches = (await dispatched()).slice(before);
    expect(dispatches).toEqual([
      expect.objectContaining({
        kind: "input",
        deviceId: "lamp-dup",
        idempotencyKey: "key-A",
        deliveryId: first.receipt.deliveryId,
        text: "build a house",
      }),
    ]);
    const conflict = await peer.send("key-A", "build a boat");
    expect(conflict).toMatchObject({ error: { code: "IDEMPOTENCY_CONFLICT" } });
    expect((await dispatched()).length).toBe(before + 1);
    expect(await peer.receipt("key-A")).toMatchObject({ type: "receipt.get_result", receipt: first.receipt });
    expect(await peer.receipt("never-sent")).toMatchObject({ type: "receipt.get_result", receipt: null });
    await peer.close();
  });

  it("reserves turn.stop like a send and dispatches it as a stop", async () => {
    const peer = await HarnessPeer.connect(s.harness.url, "lamp-stop");
    await peer.hello();
    const answer = await peer.stop("stop-1");
    expect(answer).toMatchObject({
      type: "turn.stop_result",
      status: "accepted",
      receipt: { operation: "turn.stop", state: "queued" },
    });
    expect((await dispatched()).filter((entry) => entry.deviceId === "lamp-stop")).toEqual([
      expect.objectContaining({
        kind: "stop",
        idempotencyKey: "stop-1",
        deliveryId: receiptOf(answer).deliveryId,
      }),
    ]);
    expect(await peer.send("stop-1")).toMatchObject({ error: { code: "IDEMPOTENCY_CONFLICT" } });
    await peer.close();
  });

  it("answers BACKPRESSURE at capacity when every reservation is unresolved, evicting nothing", async () => {
    const peer = await HarnessPeer.connect(s.harness.url, "lamp-full");
    await peer.hello();
    for (const key of ["f-1", "f-2", "f-3"])
      expect(await peer.send(key)).toMatchObject({ status: "accepted" });
    expect(await peer.send("f-4")).toMatchObject({
      type: "turn.send_result",
      error: { code: "BACKPRESSURE" },
    });
    expect((await storeCounts(s.t, "lamp-full")).reservations).toBe(3);
    for (const key of ["f-1", "f-2", "f-3"])
      expect(await peer.receipt(key)).toMatchObject({ receipt: { state: "queued" } });
    await peer.close();
  });

  it("refuses unknown agents and agents of another machine", async () => {
    const peer = await HarnessPeer.connect(s.harness.url, "lamp-agents");
    await peer.hello();
    const base = { type: "turn.send", idempotencyKey: "a-1", text: "hi" };
    expect(
      await peer.request({ ...base, requestId: randomUUID(), machineId: MACHINE, agentId: "ghost" }),
    ).toMatchObject({ error: { code: "AGENT_NOT_FOUND" } });
    expect(
      await peer.request({ ...base, requestId: randomUUID(), machineId: "machine-9", agentId: AGENT }),
    ).toMatchObject({ error: { code: "MACHINE_MISMATCH" } });
    expect((await storeCounts(s.t, "lamp-agents")).reservations).toBe(0);
    await peer.close();
  });

  it("rejects malformed frames with coded errors addressed to their op", async () => {
    const peer = await HarnessPeer.connect(s.harness.url, "lamp-bad");
    await peer.hello();
    const requestId = randomUUID();
    expect(await peer.sendRaw("{not json", null)).toEqual({
      type: "error_result",
      requestId: null,
      error: { code: "INVALID_REQUEST", message: "frame is not JSON" },
    });
    expect(await peer.request({ type: "turn.fly", requestId })).toMatchObject({
      type: "error_result",
      requestId,
      error: { code: "INVALID_REQUEST" },
    });
    const send = {
      type: "turn.send",
      requestId,
      machineId: MACHINE,
      agentId: AGENT,
      idempotencyKey: "k",
      text: "x",
    };
    expect(await peer.sendRaw(JSON.stringify({ ...send, requestId: "not-a-uuid" }), null)).toMatchObject({
      type: "turn.send_result",
      requestId: null,
      error: { code: "INVALID_REQUEST" },
    });
    expect(await peer.request({ ...send, extra: 1 })).toMatchObject({
      type: "turn.send_result",
      requestId,
      error: { code: "INVALID_REQUEST" },
    });
    expect(await peer.request({ ...send, text: "é".repeat(8193) })).toMatchObject({
      error: { code: "PAYLOAD_TOO_LARGE" },
    });
    expect(await peer.request({ ...send, idempotencyKey: "bad key" })).toMatchObject({
      error: { code: "INVALID_REQUEST" },
    });
    expect(await peer.request({ type: "hello", requestId, proto: 2 })).toMatchObject({
      type: "hello_result",
      error: { code: "UNSUPPORTED_CAPABILITY" },
    });
    expect((await storeCounts(s.t, "lamp-bad")).reservations).toBe(0);
    await peer.close();
  });
});

describe("harness-gateway per-connection limits", () => {
  const limited = useHarnessStack("hgw-limits", {
    RATE_LIMIT_BURST: "20",
    RATE_LIMIT_PER_SECOND: "0.001",
    MAX_IN_FLIGHT: "1",
  });

  it("answers RATE_LIMITED once the token bucket is empty and BACKPRESSURE beyond the in-flight bound", async () => {
    const peer = await HarnessPeer.connect(limited.harness.url, "lamp-limits");
    await peer.hello();
    const burst = await Promise.all(Array.from({ length: 8 }, (_, i) => peer.receipt(`burst-${i}`)));
    const codes = burst.map((frame) => (frame.error as { code?: string } | undefined)?.code ?? "ok");
    expect(codes).toContain("BACKPRESSURE");
    expect(codes).toContain("ok");
    const answers: string[] = [];
    for (let i = 0; i < 20; i += 1) {
      const frame = await peer.receipt(`slow-${i}`);
      answers.push((frame.error as { code?: string } | undefined)?.code ?? "ok");
    }
    expect(answers.at(-1)).toBe("RATE_LIMITED");
    expect(answers.filter((code) => code === "ok").length).toBeLessThanOrEqual(20 - 1 - 8);
    await peer.close();
  });
});
