import { asFrame, parseFrame, text } from "../../../libs/contract/engine-frame.js";
import { sleep } from "../../../libs/timing/sleep.js";
import {
  outboundInput,
  type DispatchInput,
  type DispatchStop,
  type EngineSession,
  type PlannedFrame,
  type Transmit,
} from "./engine-session.js";

const CLIENT_INFO = { name: "lampline", title: "Lampline", version: "0.1.0" };
/** How long an input waits for the turn id of a turn/start still in flight before it is planned anyway. */
const TURN_START_SETTLE_MS = 5_000;

type Response = { result?: unknown; error?: unknown };

/**
 * Codex app-server JSON-RPC (lines without "jsonrpc", as the corpus records them). Each runtime opens with
 * initialize (id 1), initialized, thread/start (id 2); request ids then increase per runtime. An input is a
 * turn/start when no turn of our thread runs, a turn/steer (expectedTurnId) when one does; our deliveryId rides
 * as `clientUserMessageId`. A steer answered "no active turn" raced the turn's end: it falls back to turn/start.
 */
export class CodexAppServerSession implements EngineSession {
  private nextId = 1;
  private threadId: string | undefined;
  private activeTurnId: string | undefined;
  private lastTurnId: string | undefined;
  private readonly completedTurns = new Set<string>();
  private readonly waiting = new Map<number, (response: Response) => void>();
  private turnStartInFlight: Promise<void> | undefined;

  constructor(private readonly transmit: Transmit) {}

  async start(): Promise<void> {
    const initialize = this.request("initialize", {
      capabilities: { experimentalApi: true, optOutNotificationMethods: ["turn/diff/updated"] },
      clientInfo: CLIENT_INFO,
    });
    await this.transmit(initialize.raw);
    expectResult(await initialize.response, "initialize");
    await this.transmit(JSON.stringify({ method: "initialized" }));
    const threadStart = this.request("thread/start", {});
    await this.transmit(threadStart.raw);
    const result = asFrame(expectResult(await threadStart.response, "thread/start"));
    this.threadId = text(asFrame(result?.thread)?.id);
    if (!this.threadId) throw new Error("thread/start answered without a thread id");
  }

  observe(line: string): void {
    const frame = parseFrame(line);
    if (!frame) return;
    if (typeof frame.id === "number" && frame.method === undefined) {
      this.waiting.get(frame.id)?.({ result: frame.result, error: frame.error });
      this.waiting.delete(frame.id);
      return;
    }
    const params = asFrame(frame.params);
    if (text(params?.threadId) !== this.threadId) return;
    const turnId = text(asFrame(params?.turn)?.id);
    if (frame.method === "turn/started" && turnId) this.turnRunning(turnId);
    if (frame.method === "turn/completed" && turnId) {
      this.completedTurns.add(turnId);
      if (this.activeTurnId === turnId) this.activeTurnId = undefined;
    }
  }

  async inputFrame(input: DispatchInput): Promise<PlannedFrame> {
    if (this.turnStartInFlight) await this.turnStartInFlight;
    if (this.activeTurnId) return this.steer(input, this.activeTurnId);
    return this.turnStart(input);
  }

  stopFrame(_stop: DispatchStop): PlannedFrame {
    const turnId = this.activeTurnId ?? this.lastTurnId ?? null;
    return { raw: this.request("turn/interrupt", { threadId: this.threadId, turnId }).raw, mode: "direct" };
  }

  private turnStart(input: DispatchInput): PlannedFrame {
    const request = this.request("turn/start", {
      threadId: this.threadId,
      input: [{ type: "text", text: input.text }],
      clientUserMessageId: input.deliveryId,
    });
    const settled = request.response.then((response) => {
      const turn = asFrame(asFrame(response.result)?.turn);
      const turnId = text(turn?.id);
      if (turnId && turn?.status === "inProgress") this.turnRunning(turnId);
    });
    const inFlight = Promise.race([settled, sleep(TURN_START_SETTLE_MS)]).finally(() => {
      if (this.turnStartInFlight === inFlight) this.turnStartInFlight = undefined;
    });
    this.turnStartInFlight = inFlight;
    return { raw: request.raw, mode: "direct" };
  }

  private steer(input: DispatchInput, turnId: string): PlannedFrame {
    const request = this.request("turn/steer", {
      threadId: this.threadId,
      expectedTurnId: turnId,
      input: [{ type: "text", text: input.text }],
      clientUserMessageId: input.deliveryId,
    });
    void request.response.then(async (response) => {
      const message = text(asFrame(response.error)?.message) ?? "";
      if (!/no active turn/i.test(message)) return;
      if (this.turnStartInFlight) await this.turnStartInFlight;
      const fallback = this.activeTurnId ? this.steer(input, this.activeTurnId) : this.turnStart(input);
      await this.transmit(fallback.raw, outboundInput(input, fallback.mode));
    });
    return { raw: request.raw, mode: "steering" };
  }

  private turnRunning(turnId: string): void {
    this.lastTurnId = turnId;
    if (!this.completedTurns.has(turnId)) this.activeTurnId = turnId;
  }

  private request(method: string, params: unknown): { raw: string; response: Promise<Response> } {
    const id = this.nextId++;
    const response = new Promise<Response>((resolve) => this.waiting.set(id, resolve));
    return { raw: JSON.stringify({ id, method, params }), response };
  }
}

function expectResult(response: Response, method: string): unknown {
  if (response.error !== undefined) throw new Error(`${method} failed: ${JSON.stringify(response.error)}`);
  return response.result;
}
