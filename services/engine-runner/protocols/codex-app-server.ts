import { asFrame, parseFrame, text } from "../../../libs/contract/engine-frame.js";
import type { ApprovalPolicy } from "../../../libs/contract/engine.js";
import { sleep } from "../../../libs/timing/sleep.js";
import { answerCodexRequest } from "./engine-requests.js";
import {
  outboundInput,
  runningInput,
  type DispatchInput,
  type DispatchStop,
  type EngineSession,
  type PlannedFrame,
  type RunningInput,
  type SessionHooks,
} from "./engine-session.js";

const CLIENT_INFO = { name: "lampline", title: "Lampline", version: "0.1.0" };
/** How long an input waits for the turn id of a turn/start still in flight before it is planned anyway. */
const TURN_START_SETTLE_MS = 5_000;

type Response = { result?: unknown; error?: unknown };

/** The turn our inputs went into: it has ended once the engine completed it and no steer into it is unanswered. */
interface InputTurn {
  turnId?: string;
  inputs: RunningInput[];
  completed: boolean;
  steersInFlight: number;
}

/**
 * Codex app-server JSON-RPC (lines without "jsonrpc", as the corpus records them). Each runtime opens with
 * initialize (id 1), initialized, thread/start (id 2); request ids then increase per runtime. An input is a
 * turn/start when no turn of our thread runs, a turn/steer (expectedTurnId) when one does; our deliveryId rides
 * as `clientUserMessageId`. A steer answered "no active turn" raced the turn's end: it falls back to turn/start,
 * and the turn counts as ended only once every steer into it is answered, so nothing else starts in between.
 * Server requests (approvals, questions for the user) are answered at once (engine-requests.ts), never left open.
 */
export class CodexAppServerSession implements EngineSession {
  private nextId = 1;
  private threadId: string | undefined;
  private activeTurnId: string | undefined;
  private lastTurnId: string | undefined;
  private readonly completedTurns = new Set<string>();
  private readonly waiting = new Map<number, (response: Response) => void>();
  private turnStartInFlight: Promise<void> | undefined;
  private inputTurn: InputTurn | undefined;

  private readonly transmit: SessionHooks["transmit"];

  constructor(
    private readonly hooks: SessionHooks,
    private readonly approvals: ApprovalPolicy,
  ) {
    this.transmit = hooks.transmit;
  }

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
    const answer = answerCodexRequest(frame, this.approvals);
    if (answer) {
      void this.transmit(answer.raw).then(() => this.hooks.requestAnswered(answer));
      return;
    }
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
      const turn = this.inputTurn;
      if (turn?.turnId === turnId) this.completeInputTurn(turn);
    }
  }

  runningInputs(): readonly RunningInput[] {
    return this.inputTurn?.inputs ?? [];
  }

  /** A turn/start's input and every steer into the turn are the turn's own: Codex has no queue of its own. */
  consumedInputs(): readonly RunningInput[] {
    return this.runningInputs();
  }

  async inputFrame(input: DispatchInput): Promise<PlannedFrame> {
    if (this.turnStartInFlight) await this.turnStartInFlight;
    if (this.activeTurnId) return this.steer(input, this.activeTurnId);
    return this.turnStart(input);
  }

  stopFrame(_stop: DispatchStop): PlannedFrame {
    const turnId = this.inputTurn?.turnId ?? this.activeTurnId ?? this.lastTurnId ?? null;
    return { raw: this.request("turn/interrupt", { threadId: this.threadId, turnId }).raw, mode: "direct" };
  }

  private turnStart(input: DispatchInput): PlannedFrame {
    const request = this.request("turn/start", {
      threadId: this.threadId,
      input: [{ type: "text", text: input.text }],
      clientUserMessageId: input.deliveryId,
    });
    const inputTurn: InputTurn = { inputs: [runningInput(input)], completed: false, steersInFlight: 0 };
    this.inputTurn = inputTurn;
    const settled = request.response.then((response) => {
      const turn = asFrame(asFrame(response.result)?.turn);
      const turnId = text(turn?.id);
      inputTurn.turnId ??= turnId;
      if (turnId && turn?.status === "inProgress") this.turnRunning(turnId);
      if (!turnId || turn?.status !== "inProgress" || this.completedTurns.has(turnId))
        this.completeInputTurn(inputTurn);
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
    const inputTurn = this.inputTurn;
    inputTurn?.inputs.push(runningInput(input));
    if (inputTurn) inputTurn.steersInFlight += 1;
    void request.response.then(async (response) => {
      if (inputTurn) inputTurn.steersInFlight -= 1;
      const message = text(asFrame(response.error)?.message) ?? "";
      if (!/no active turn/i.test(message)) {
        if (inputTurn) this.endIfSettled(inputTurn);
        return;
      }
      if (this.turnStartInFlight) await this.turnStartInFlight;
      if (inputTurn)
        inputTurn.inputs = inputTurn.inputs.filter((held) => held.deliveryId !== input.deliveryId);
      const fallback = this.activeTurnId ? this.steer(input, this.activeTurnId) : this.turnStart(input);
      if (inputTurn && this.inputTurn !== inputTurn) this.endIfSettled(inputTurn);
      await this.transmit(fallback.raw, outboundInput(input, fallback.mode));
    });
    return { raw: request.raw, mode: "steering" };
  }

  private turnRunning(turnId: string): void {
    this.lastTurnId = turnId;
    if (!this.completedTurns.has(turnId)) this.activeTurnId = turnId;
    if (this.inputTurn && this.inputTurn.turnId === undefined) this.inputTurn.turnId = turnId;
  }

  private completeInputTurn(turn: InputTurn): void {
    turn.completed = true;
    this.endIfSettled(turn);
  }

  /** A completed turn ends for the runner once no steer into it is unanswered (a refused one starts the next). */
  private endIfSettled(turn: InputTurn): void {
    if (!turn.completed || turn.steersInFlight > 0) return;
    if (this.inputTurn === turn) {
      this.inputTurn = undefined;
      this.hooks.turnEnded();
    }
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
