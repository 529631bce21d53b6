import type { CorrelationKind } from "../../libs/contract/engine.js";
import { randomUUID } from "node:crypto";
import { mkdtempSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterAll, beforeAll } from "vitest";
import WebSocket from "ws";
import { signToken } from "../../libs/auth/tokens.js";
import { STREAM_CATALOG } from "../../libs/contract/catalog.js";
import { type HarnessEvidence } from "../../libs/contract/pipeline-payloads.js";
import { hostServices, type HostedServices } from "../../libs/service/service-host.js";
import { appendToStream } from "../../libs/streams/stream-writer.js";
import { harnessGatewayService } from "../../services/harness-gateway/definition.js";
import { HarnessDeviceKeys } from "../../libs/harness-store/harness-keys.js";
import { storedEventSchema, type StoredEvent } from "../../libs/harness-store/stored-records.js";
import { resultProducerService } from "../../services/result-producer/definition.js";
import { createTestRedis, waitFor, type TestRedis } from "../helpers/test-redis.js";
import { consumerGroupsOf } from "../../libs/streams/group-info.js";

/** Signs Harness tokens (aud `harness`); the OS secret differs, as in every deployment. */
export const HARNESS_SECRET = "harness-test-secret-0123456789abcdef";
/** Signs OS tokens (aud `os`) for suites that host the device-gateway beside the Harness. */
export const OS_SECRET = "harness-fixture-os-secret-0123456789abcdef";
export const MACHINE = "machine-1";
export const AGENT = "agent-1";
export const OTHER_AGENT = "agent-2";

export function agentsFile(): string {
  const file = join(mkdtempSync(join(tmpdir(), "harness-agents-")), "agents.json");
  const agents = [
    { agentId: AGENT, machineId: MACHINE, engine: "claude-stream-json", command: ["claude"] },
    { agentId: OTHER_AGENT, machineId: MACHINE, engine: "codex-app-server", command: ["codex"] },
  ];
  writeFileSync(file, JSON.stringify(agents));
  return file;
}

/** Settings for the gateway + producer under test: fast loops, otherwise the defaults. */
export function harnessEnv(t: TestRedis, overrides: Record<string, string> = {}): Record<string, string> {
  return {
    REDIS_URL: t.url,
    KEY_PREFIX: t.keys.prefix,
    STREAM_PARTITIONS: String(t.keys.partitions),
    PORT: "0",
    LOG_LEVEL: "silent",
    AUTH_JWT_SECRET: OS_SECRET,
    HARNESS_JWT_SECRET: HARNESS_SECRET,
    AGENTS_FILE: agentsFile(),
    HARNESS_MACHINE_ID: MACHINE,
    STREAM_BLOCK_MS: "100",
    LIVE_CATCHUP_MS: "200",
    ...overrides,
  };
}

export async function startHarness(
  t: TestRedis,
  overrides: Record<string, string> = {},
): Promise<HostedServices> {
  return hostServices(
    "harness-test",
    [harnessGatewayService, resultProducerService],
    harnessEnv(t, overrides),
  );
}

/** A Redis namespace with the gateway and the producer running on it, and hand-written evidence for it. */
export interface HarnessStack {
  t: TestRedis;
  harness: HostedServices;
  feed: EvidenceFeed;
}

/** The stack of a test file or describe block: started before its first test, stopped after its last. */
export function useHarnessStack(label: string, overrides: Record<string, string> = {}): HarnessStack {
  const stack = {} as HarnessStack;
  beforeAll(async () => {
    const t = createTestRedis(label);
    Object.assign(stack, { t, harness: await startHarness(t, overrides), feed: new EvidenceFeed(t) });
  });
  afterAll(async () => {
    await stack.harness.stop();
    await stack.t.cleanup();
  });
  return stack;
}

export const wsUrl = (httpUrl: string) => `${httpUrl.replace(/^http/, "ws")}/v1/harness/ws`;

/** A Harness token: the OS acting for `deviceId` (role `os`), or a Harness operator. */
export const tokenFor = (deviceId: string, role: "os" | "operator" = "os") =>
  signToken(HARNESS_SECRET, { audience: "harness", sub: deviceId, role });

type Frame = Record<string, unknown> & { type: string };

/** A peer OS over a real WebSocket: request/response by requestId, every other frame recorded in order. */
export class HarnessPeer {
  readonly frames: Frame[] = [];
  /** The exact text of every frame, in order (payload bytes are compared byte for byte). */
  readonly raw: string[] = [];
  private waiters: { requestId: string | null; resolve: (frame: Frame) => void }[] = [];
  private capabilities: string[] = [];
  closed: { code: number; reason: string } | undefined;

  private constructor(readonly socket: WebSocket) {
    socket.on("message", (data) => {
      this.raw.push(data.toString());
      const frame = JSON.parse(data.toString()) as Frame;
      this.frames.push(frame);
      if (!frame.type.endsWith("_result")) return;
      const index = this.waiters.findIndex((waiter) => waiter.requestId === (frame.requestId ?? null));
      if (index >= 0) this.waiters.splice(index, 1)[0]?.resolve(frame);
    });
    socket.on("close", (code, reason) => (this.closed = { code, reason: reason.toString() }));
  }

  static async connect(url: string, deviceId: string): Promise<HarnessPeer> {
    return HarnessPeer.connectWithToken(url, await tokenFor(deviceId));
  }

  static connectWithToken(url: string, token: string): Promise<HarnessPeer> {
    const socket = new WebSocket(wsUrl(url), { headers: { authorization: `Bearer ${token}` } });
    return new Promise((resolve, reject) => {
      socket.once("open", () => resolve(new HarnessPeer(socket)));
      socket.once("unexpected-response", (_request, response) =>
        reject(new Error(`upgrade refused: ${response.statusCode}`)),
      );
      socket.once("error", reject);
    });
  }

  /** Sends a raw frame and resolves with its `_result` (matched by requestId, or the next null-id result). */
  sendRaw(text: string, requestId: string | null): Promise<Frame> {
    const answer = new Promise<Frame>((resolve) => this.waiters.push({ requestId, resolve }));
    this.socket.send(text);
    return answer;
  }

  request(frame: Record<string, unknown>): Promise<Frame> {
    const requestId = typeof frame.requestId === "string" ? frame.requestId : null;
    return this.sendRaw(JSON.stringify(frame), requestId);
  }

  hello(
    capabilities: string[] = ["turn.correlation.v2"],
    resume?: { serverInstanceId: string; cursor: number },
  ) {
    this.capabilities = capabilities;
    return this.request({
      type: "hello",
      requestId: randomUUID(),
      proto: 1,
      capabilities,
      ...(resume ? { resume } : {}),
    });
  }

  send(idempotencyKey: string, text = `please do ${idempotencyKey}`, agentId = AGENT) {
    return this.request({
      type: "turn.send",
      requestId: randomUUID(),
      machineId: MACHINE,
      agentId,
      idempotencyKey,
      text,
    });
  }

  stop(idempotencyKey: string, agentId = AGENT, targetIdempotencyKey?: string) {
    return this.request({
      type: "turn.stop",
      requestId: randomUUID(),
      machineId: MACHINE,
      agentId,
      idempotencyKey,
      ...(targetIdempotencyKey === undefined ? {} : { targetIdempotencyKey }),
    });
  }

  receipt(idempotencyKey: string) {
    return this.request({ type: "receipt.get", requestId: randomUUID(), idempotencyKey });
  }

  /** The payload text of each turn.result/turn.summary frame exactly as it arrived. */
  resultPayloadBytes(kind = "turn.result"): string[] {
    return this.raw
      .filter((text) => text.includes(`"kind":"${kind}"`) && text.startsWith('{"type":"event"'))
      .map((text) => text.slice(text.indexOf(',"payload":') + ',"payload":'.length, -1));
  }

  events(kind?: string): Frame[] {
    return this.frames.filter(
      (frame) => frame.type === "event" && (kind === undefined || frame.kind === kind),
    );
  }

  async waitForEvents(kind: string, count: number, timeoutMs = 5_000): Promise<Frame[]> {
    return waitFor(
      () => this.events(kind),
      (events) => events.length >= count,
      { timeoutMs },
    );
  }

  /**
   * Resolves once the gateway has sent this peer everything its device's log holds now. A session answers hellos
   * and pushes in one queue, so a hello resumed at the last cursor seen is answered after every push queued before
   * it, and its own replay sends whatever the peer had not been sent yet.
   */
  async drained(): Promise<void> {
    const hello = this.frames.filter((frame) => frame.type === "hello_result").at(-1);
    if (typeof hello?.serverInstanceId !== "string") throw new Error("drained() before a hello");
    const seen = this.frames.map((frame) => (frame.type === "resync" ? frame.cursor : frame.eventId));
    const cursor = Math.max(
      Number(hello.cursor),
      ...seen.filter((id): id is number => typeof id === "number"),
    );
    const answer = await this.hello(this.capabilities, { serverInstanceId: hello.serverInstanceId, cursor });
    if (answer.resumed !== true) throw new Error(`resume at ${cursor} refused: ${JSON.stringify(answer)}`);
  }

  close(): Promise<void> {
    if (this.socket.readyState === WebSocket.CLOSED) return Promise.resolve();
    return new Promise((resolve) => {
      this.socket.once("close", () => resolve());
      this.socket.close();
    });
  }
}

/** Hand-written evidence: what the evidence-extractor would emit, with deterministic evidenceIds. */
export class EvidenceFeed {
  constructor(private readonly t: TestRedis) {}

  async emit(evidence: HarnessEvidence): Promise<void> {
    await appendToStream(this.t.redis, this.t.keys, STREAM_CATALOG.harnessEvidence, evidence);
  }

  base(evidenceId: string) {
    return { agentId: AGENT, machineId: MACHINE, runtimeId: "runtime-1", evidenceId, observedAt: Date.now() };
  }

  delivered(deviceId: string, receipt: ReceiptRef, mode: "direct" | "steering" | "native_queue" = "direct") {
    return this.emit({
      kind: "input.delivered",
      ...this.base(`delivered-${receipt.deliveryId}`),
      ...ref(deviceId, receipt),
      mode,
    });
  }

  consumed(deviceId: string, receipt: ReceiptRef) {
    return this.emit({
      kind: "input.consumed",
      ...this.base(`consumed-${receipt.deliveryId}`),
      ...ref(deviceId, receipt),
      correlation: "native_exact",
    });
  }

  completed(
    evidenceId: string,
    members: { deviceId: string; receipt: ReceiptRef }[],
    fullText: string,
    outcome: "completed" | "failed" | "cancelled" = "completed",
    engineTurnId?: string,
    correlation: CorrelationKind = "native_exact",
  ) {
    return this.emit({
      kind: "turn.completed",
      ...this.base(evidenceId),
      outcome,
      fullText,
      ...(engineTurnId ? { engineTurnId } : {}),
      members: members.map((member) => ({
        ...ref(member.deviceId, member.receipt),
        correlation,
      })),
    });
  }
}

export interface ReceiptRef {
  idempotencyKey: string;
  deliveryId: string;
}

const ref = (deviceId: string, receipt: ReceiptRef) => ({
  deviceId,
  idempotencyKey: receipt.idempotencyKey,
  deliveryId: receipt.deliveryId,
});

/** The reservation identity in the receipt a turn.send/turn.stop answer carried. */
export function receiptOf(frame: Record<string, unknown>): ReceiptRef {
  const receipt = frame.receipt as ReceiptRef | undefined;
  if (!receipt) throw new Error(`no receipt in ${JSON.stringify(frame)}`);
  return { idempotencyKey: receipt.idempotencyKey, deliveryId: receipt.deliveryId };
}

export async function storeCounts(t: TestRedis, deviceId: string) {
  const device = new HarnessDeviceKeys(t.keys, deviceId);
  const replies = await t.redis
    .pipeline()
    .zcard(device.reservations)
    .xlen(t.keys.stream(STREAM_CATALOG.harnessDispatch.name))
    .zcard(device.results)
    .exec();
  const [reservations = 0, dispatched = 0, results = 0] = (replies ?? []).map(([error, value]) => {
    if (error) throw error;
    return Number(value);
  });
  return { reservations, dispatched, results };
}

/** The last eventId handed out on the device's log (0 before its first event). */
export async function eventHead(t: TestRedis, deviceId: string): Promise<number> {
  return Number((await t.redis.get(new HarnessDeviceKeys(t.keys, deviceId).eventSequence)) ?? 0);
}

/** The events the device's log still holds, oldest first: eventId and stored body. */
export async function loggedEvents(
  t: TestRedis,
  deviceId: string,
): Promise<{ eventId: number; body: StoredEvent }[]> {
  const entries = await t.redis.xrange(new HarnessDeviceKeys(t.keys, deviceId).eventLog, "-", "+");
  return entries.map(([id, fields]) => ({
    eventId: Number(id.slice(2)),
    body: storedEventSchema.parse(JSON.parse(fields[1] ?? "")),
  }));
}

/** The log's floor: the eventId before its oldest logged event (its head when it holds none). */
export async function eventFloor(t: TestRedis, deviceId: string): Promise<number> {
  const [oldest] = await loggedEvents(t, deviceId);
  return oldest === undefined ? eventHead(t, deviceId) : oldest.eventId - 1;
}

/** Waits until the producer's consumer group has acked everything on harness.evidence. */
export async function evidenceSettled(t: TestRedis): Promise<void> {
  const stream = t.keys.stream(STREAM_CATALOG.harnessEvidence.name);
  const settled = await waitFor(
    async () => {
      const { group: producerGroup } = STREAM_CATALOG.harnessEvidence.consumers.resultProducer;
      const info = (await consumerGroupsOf(t.redis, stream)).find(({ name }) => name === producerGroup);
      return info !== undefined && info.pending === 0 && (info.lag ?? 0) === 0;
    },
    (done) => done,
  );
  if (!settled) throw new Error("harness.evidence not settled");
}
