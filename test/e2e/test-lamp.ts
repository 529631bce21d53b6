import { randomUUID } from "node:crypto";
import WebSocket from "ws";
import {
  playbackStartSchema,
  voiceCancelResultSchema,
  voiceRequestResultSchema,
  type PlaybackStart,
  type ReplyRoute,
} from "../../libs/contract/lamp-wire.js";
import { runUpdateFrameSchema, type RunUpdateFrame } from "../../libs/contract/run-update.js";
import { sleep } from "../../libs/timing/sleep.js";

export interface TestLampOptions {
  url: string;
  token: string;
  /** Ack `started` then `finished` for every playback.start (default true); false simulates lost acks. */
  ack: boolean;
  /** Called with every frame the OS sends, after it is recorded (a Lamp under faults acks on its own terms). */
  onFrame?: (frame: Record<string, unknown>) => void;
  /** Called once when the connection ends, whichever side closed it. */
  onClose?: () => void;
}

export interface SayOptions {
  agentId: string;
  machineId: string;
  text: string;
  voiceTargetId?: string;
  replyRoute?: ReplyRoute;
  expiresAt?: string;
  requestId?: string;
}

/** A Lamp in a test: sends voice requests over the real WebSocket and records every frame the OS sends it. */
export class TestLamp {
  readonly frames: Record<string, unknown>[] = [];
  private ended = false;

  private constructor(
    private readonly socket: WebSocket,
    private readonly options: TestLampOptions,
  ) {
    socket.on("message", (data) => this.onFrame(JSON.parse(data.toString()) as Record<string, unknown>));
    socket.once("close", () => {
      this.ended = true;
      options.onClose?.();
    });
    // A failure after open is followed by "close"; without a listener it would crash the test process.
    socket.on("error", () => undefined);
  }

  /** True once the connection ended: nothing more can arrive on it. */
  get closed(): boolean {
    return this.ended;
  }

  static connect(options: Partial<TestLampOptions> & { url: string; token: string }): Promise<TestLamp> {
    const socket = new WebSocket(options.url, { headers: { authorization: `Bearer ${options.token}` } });
    const lamp = new TestLamp(socket, { ack: true, ...options });
    return new Promise((resolve, reject) => {
      socket.once("open", () => resolve(lamp));
      socket.once("error", reject);
      socket.once("close", () => reject(new Error("lamp connection closed before it opened")));
      socket.once("unexpected-response", (_request, response) =>
        reject(new Error(`lamp connection refused: HTTP ${response.statusCode}`)),
      );
    });
  }

  /** Sends a voice.request and waits for its voice.request_result. */
  async say(options: SayOptions): Promise<{ runId: string; idempotencyKey: string; requestId: string }> {
    const requestId = options.requestId ?? randomUUID();
    this.send({
      type: "voice.request",
      requestId,
      agentId: options.agentId,
      machineId: options.machineId,
      text: options.text,
      voiceTarget: {
        id: options.voiceTargetId ?? "target-1",
        ...(options.expiresAt ? { expiresAt: options.expiresAt } : {}),
      },
      replyRoute: options.replyRoute ?? "voice",
    });
    const frame = await this.waitForFrame(
      (candidate) => candidate.type === "voice.request_result" && candidate.requestId === requestId,
    );
    if ("error" in frame) throw new Error(`voice.request failed: ${JSON.stringify(frame)}`);
    const result = voiceRequestResultSchema.parse(frame);
    return { runId: result.runId, idempotencyKey: result.idempotencyKey, requestId };
  }

  async cancel(runId: string) {
    const requestId = randomUUID();
    this.send({ type: "voice.cancel", requestId, runId });
    const frame = await this.waitForFrame(
      (candidate) => candidate.type === "voice.cancel_result" && candidate.requestId === requestId,
    );
    return voiceCancelResultSchema.parse(frame);
  }

  repeat(resultId: string, voiceTargetId?: string): Promise<Record<string, unknown>> {
    const requestId = randomUUID();
    this.send({ type: "playback.repeat", requestId, resultId, ...(voiceTargetId ? { voiceTargetId } : {}) });
    return this.waitForFrame(
      (frame) => frame.type === "playback.repeat_result" && frame.requestId === requestId,
    );
  }

  /** Asks for the device's run.updates after `after`; resolves with the answer (the updates follow it). */
  async updatesSince(after: number): Promise<Record<string, unknown>> {
    const requestId = randomUUID();
    this.send({ type: "run.updates_since", requestId, after });
    return this.waitForFrame(
      (frame) => frame.type === "run.updates_since_result" && frame.requestId === requestId,
    );
  }

  /** Every run.update received so far, in arrival order (each parsed with the wire schema). */
  get runUpdates(): RunUpdateFrame[] {
    return this.frames.flatMap((frame) => {
      if (frame.type !== "run.update") return [];
      return [runUpdateFrameSchema.parse(frame)];
    });
  }

  /** Waits for a run.update of `runId` that `match` accepts. */
  async waitForRunUpdate(
    runId: string,
    match: (update: RunUpdateFrame) => boolean,
    timeoutMs = 30_000,
  ): Promise<RunUpdateFrame> {
    const frame = await this.waitForFrame(
      (candidate) =>
        candidate.type === "run.update" &&
        candidate.runId === runId &&
        match(runUpdateFrameSchema.parse(candidate)),
      timeoutMs,
    );
    return runUpdateFrameSchema.parse(frame);
  }

  /** Every playback.start received so far (what the Lamp would have spoken). */
  get utterances(): PlaybackStart[] {
    return this.frames.flatMap((frame) => {
      const parsed = playbackStartSchema.safeParse(frame);
      return parsed.success ? [parsed.data] : [];
    });
  }

  async waitForUtterances(count: number, timeoutMs = 20_000): Promise<PlaybackStart[]> {
    const deadline = Date.now() + timeoutMs;
    while (this.utterances.length < count && Date.now() < deadline) await sleep(25);
    return this.utterances;
  }

  /** Sends a frame; on a connection that is closing or closed the frame is lost, as on a real network. */
  send(frame: Record<string, unknown>): void {
    if (this.socket.readyState === WebSocket.OPEN) this.socket.send(JSON.stringify(frame));
  }

  close(): void {
    this.socket.close();
  }

  /** Ends the connection without a closing handshake, as a network drop does. */
  drop(): void {
    this.socket.terminate();
  }

  async waitForFrame(
    match: (frame: Record<string, unknown>) => boolean,
    timeoutMs = 20_000,
  ): Promise<Record<string, unknown>> {
    const deadline = Date.now() + timeoutMs;
    for (;;) {
      const found = this.frames.find(match);
      if (found) return found;
      if (this.ended) throw new Error(`connection closed before a matching frame arrived`);
      if (Date.now() > deadline)
        throw new Error(`no matching frame within ${timeoutMs} ms: ${JSON.stringify(this.frames)}`);
      await sleep(25);
    }
  }

  private onFrame(frame: Record<string, unknown>): void {
    this.frames.push(frame);
    this.options.onFrame?.(frame);
    const start = playbackStartSchema.safeParse(frame);
    if (!start.success || !this.options.ack) return;
    this.send({ type: "playback.ack", playbackId: start.data.playbackId, state: "started" });
    this.send({ type: "playback.ack", playbackId: start.data.playbackId, state: "finished" });
  }
}
