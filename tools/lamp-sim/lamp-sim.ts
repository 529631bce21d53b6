import { randomUUID } from "node:crypto";
import WebSocket from "ws";
import {
  lampRequestSchema,
  playbackStartSchema,
  type LampRequest,
  type PlaybackStart,
} from "../../libs/contract/lamp-wire.js";
import { runUpdateFrameSchema } from "../../libs/contract/run-update.js";
import { runUpdateLine } from "./run-update-line.js";
import type { Speaker } from "./speaker.js";

export interface LampFaults {
  /** Receive and play, but never ack (a lost ack). */
  dropAcks: boolean;
  /** Drop the connection as soon as a playback.start arrives, without playing or acking it. */
  disconnectAfterReceive: boolean;
  /** Answer every playback.start with a `rejected` ack. */
  reject: boolean;
  /** Wait this long before acking `started`. */
  slowMs: number;
}

export interface VoiceRequestInput {
  say: string;
  agent: string;
  machine: string;
  route: "voice" | "display" | "silent";
  target: string;
  expiresInMs?: number;
}

export type Emit = (event: string, fields?: Record<string, unknown>) => void;

export interface LampSimOptions {
  url: string;
  token: string;
  speaker: Speaker;
  faults: LampFaults;
  exitAfter?: number;
  emit: Emit;
}

/**
 * A Lamp over the real WebSocket: sends what a user says, plays what the OS sends, acks it as a device would, and
 * can misbehave on purpose. Every event is reported through `emit` (one JSON line each on stdout).
 */
export class LampSim {
  private socket: WebSocket | undefined;
  private playbacks = 0;
  /** Playbacks received and not yet acked to the end: the sim exits only once every one has been answered. */
  private speaking = 0;
  private readonly waiters: { count: number; resolve: () => void }[] = [];
  private finishing = false;
  private resolveExit: (code: number) => void = () => undefined;
  /** Resolves with the process exit code once the sim is done. */
  readonly exited = new Promise<number>((resolve) => (this.resolveExit = resolve));
  lastRunId: string | undefined;
  lastResultId: string | undefined;
  private faults: LampFaults;

  constructor(private readonly options: LampSimOptions) {
    this.faults = { ...options.faults };
  }

  /** Changes how the Lamp misbehaves from the next frame on (the demo loses one playback's acks on purpose). */
  setFaults(faults: Partial<LampFaults>): void {
    this.faults = { ...this.faults, ...faults };
  }

  connect(): Promise<void> {
    const { url, token, emit } = this.options;
    const socket = new WebSocket(url, { headers: { authorization: `Bearer ${token}` } });
    this.socket = socket;
    socket.on("message", (data) => void this.onMessage(data.toString()));
    socket.on("close", (code, reason) => {
      emit("disconnected", { code, reason: reason.toString() });
      this.finish(this.finishing ? 0 : 1);
    });
    return new Promise((resolve, reject) => {
      socket.once("open", () => {
        emit("connected", { url });
        resolve();
      });
      socket.once("unexpected-response", (_request, response) =>
        reject(new Error(`connection refused: HTTP ${response.statusCode}`)),
      );
      socket.once("error", reject);
    });
  }

  say(input: VoiceRequestInput): string {
    const requestId = randomUUID();
    this.send({
      type: "voice.request",
      requestId,
      agentId: input.agent,
      machineId: input.machine,
      text: input.say,
      voiceTarget: {
        id: input.target,
        ...(input.expiresInMs === undefined
          ? {}
          : { expiresAt: new Date(Date.now() + input.expiresInMs).toISOString() }),
      },
      replyRoute: input.route,
    });
    return requestId;
  }

  repeat(resultId: string): string {
    const requestId = randomUUID();
    this.send({
      type: "playback.repeat",
      requestId,
      resultId: this.resolveLast(resultId, this.lastResultId),
    });
    return requestId;
  }

  cancel(runId: string): void {
    this.send({
      type: "voice.cancel",
      requestId: randomUUID(),
      runId: this.resolveLast(runId, this.lastRunId),
    });
  }

  /** Resolves once this many playback.start frames have arrived in total. */
  waitForPlaybacks(count: number): Promise<void> {
    if (this.playbacks >= count) return Promise.resolve();
    return new Promise((resolve) => this.waiters.push({ count, resolve }));
  }

  finish(code = 0): void {
    if (this.finishing && code !== 0) return;
    this.finishing = true;
    if (this.socket && this.socket.readyState === WebSocket.OPEN) {
      this.socket.close(1000, "lamp-sim done");
      return;
    }
    this.options.emit("exit", { code, playbacks: this.playbacks });
    this.resolveExit(code);
  }

  private send(frame: LampRequest): void {
    const checked = lampRequestSchema.parse(frame);
    this.socket?.send(JSON.stringify(checked));
    this.options.emit("sent", { frame: checked });
  }

  private async onMessage(text: string): Promise<void> {
    const { emit } = this.options;
    let frame: unknown;
    try {
      frame = JSON.parse(text);
    } catch {
      emit("error", { message: "frame is not JSON", text: text.slice(0, 200) });
      return;
    }
    emit("received", { frame });
    const start = playbackStartSchema.safeParse(frame);
    if (start.success) return this.onPlaybackStart(start.data);
    const update = runUpdateFrameSchema.safeParse(frame);
    if (update.success) {
      emit("run.update", { line: runUpdateLine(update.data) });
      return;
    }
    const runId = (frame as { type?: unknown; runId?: unknown }).runId;
    if ((frame as { type?: unknown }).type === "voice.request_result" && typeof runId === "string")
      this.lastRunId = runId;
  }

  private async onPlaybackStart(frame: PlaybackStart): Promise<void> {
    const { speaker, emit, exitAfter } = this.options;
    const faults = this.faults;
    this.playbacks += 1;
    this.lastResultId = frame.resultId;
    for (const waiter of this.waiters.filter((candidate) => candidate.count <= this.playbacks)) {
      this.waiters.splice(this.waiters.indexOf(waiter), 1);
      waiter.resolve();
    }
    if (faults.disconnectAfterReceive) {
      emit("fault", { fault: "disconnect-after-receive", playbackId: frame.playbackId });
      this.socket?.terminate();
      return;
    }
    this.speaking += 1;
    if (faults.reject) {
      this.ack(frame.playbackId, "rejected");
    } else {
      if (faults.slowMs > 0) await new Promise((resolve) => setTimeout(resolve, faults.slowMs));
      this.ack(frame.playbackId, "started");
      const file = await speaker.play(frame.playbackId, frame.text);
      emit("played", { playbackId: frame.playbackId, resultId: frame.resultId, text: frame.text, file });
      this.ack(frame.playbackId, "finished");
    }
    this.speaking -= 1;
    // A playback that arrived while an earlier one was still speaking may end first: wait for the last one.
    if (exitAfter !== undefined && this.playbacks >= exitAfter && this.speaking === 0) this.finish(0);
  }

  private ack(playbackId: string, state: "started" | "finished" | "rejected"): void {
    if (this.faults.dropAcks) {
      this.options.emit("ack.dropped", { playbackId, state });
      return;
    }
    this.send({ type: "playback.ack", playbackId, state });
  }

  private resolveLast(value: string, last: string | undefined): string {
    if (value !== "last") return value;
    if (!last) throw new Error("'last' used before anything happened");
    return last;
  }
}
