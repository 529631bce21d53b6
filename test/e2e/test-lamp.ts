import { randomUUID } from "node:crypto";
import WebSocket from "ws";
import {
  playbackStartSchema,
  voiceRequestResultSchema,
  type PlaybackStart,
  type ReplyRoute,
} from "../../libs/contract/lamp-wire.js";

export interface TestLampOptions {
  url: string;
  token: string;
  /** Ack `started` then `finished` for every playback.start (default true); false simulates lost acks. */
  ack: boolean;
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

  private constructor(
    private readonly socket: WebSocket,
    private readonly options: TestLampOptions,
  ) {
    socket.on("message", (data) => this.onFrame(JSON.parse(data.toString()) as Record<string, unknown>));
  }

  static connect(options: Partial<TestLampOptions> & { url: string; token: string }): Promise<TestLamp> {
    const socket = new WebSocket(options.url, { headers: { authorization: `Bearer ${options.token}` } });
    const lamp = new TestLamp(socket, { ack: true, ...options });
    return new Promise((resolve, reject) => {
      socket.once("open", () => resolve(lamp));
      socket.once("error", reject);
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

  cancel(runId: string): Promise<Record<string, unknown>> {
    const requestId = randomUUID();
    this.send({ type: "voice.cancel", requestId, runId });
    return this.waitForFrame(
      (frame) => frame.type === "voice.cancel_result" && frame.requestId === requestId,
    );
  }

  repeat(resultId: string): Promise<Record<string, unknown>> {
    const requestId = randomUUID();
    this.send({ type: "playback.repeat", requestId, resultId });
    return this.waitForFrame(
      (frame) => frame.type === "playback.repeat_result" && frame.requestId === requestId,
    );
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

  send(frame: Record<string, unknown>): void {
    this.socket.send(JSON.stringify(frame));
  }

  close(): void {
    this.socket.close();
  }

  async waitForFrame(
    match: (frame: Record<string, unknown>) => boolean,
    timeoutMs = 20_000,
  ): Promise<Record<string, unknown>> {
    const deadline = Date.now() + timeoutMs;
    for (;;) {
      const found = this.frames.find(match);
      if (found) return found;
      if (Date.now() > deadline)
        throw new Error(`no matching frame within ${timeoutMs} ms: ${JSON.stringify(this.frames)}`);
      await sleep(25);
    }
  }

  private onFrame(frame: Record<string, unknown>): void {
    this.frames.push(frame);
    const start = playbackStartSchema.safeParse(frame);
    if (!start.success || !this.options.ack) return;
    this.send({ type: "playback.ack", playbackId: start.data.playbackId, state: "started" });
    this.send({ type: "playback.ack", playbackId: start.data.playbackId, state: "finished" });
  }
}

const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));
