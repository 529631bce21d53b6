import { randomUUID } from "node:crypto";
import WebSocket from "ws";
import type { Json, WireFrame } from "./hostile-values.js";

/** The gateways' WebSocket maxPayload: a larger frame closes the socket with 1009 instead of an answer. */
export const MAX_FRAME_BYTES = 64 * 1024;

export interface Exchange {
  /** Every frame the server sent in answer to this one (in order). */
  answers: Json[];
  /** The exact text received, for disclosure checks. */
  raw: string;
  /** Close code when the server closed the socket instead of answering. */
  closed?: number;
}

/**
 * A WebSocket peer that can say which frames answered which request. `sentinel` mode (Lamp: frames of a socket are
 * answered in order, some get no answer) sends a marker frame after each case and collects everything up to the
 * marker's answer; `next-result` mode (Harness: every frame gets exactly one `_result`) waits for that result.
 */
export class ProbedSocket {
  private readonly pending: Json[] = [];
  private readonly rawPending: string[] = [];
  private wake: (() => void) | undefined;
  closeCode: number | undefined;

  private constructor(
    readonly socket: WebSocket,
    private readonly mode: "sentinel" | "next-result",
  ) {
    socket.on("message", (data) => {
      const text = data.toString();
      this.rawPending.push(text);
      this.pending.push(JSON.parse(text) as Json);
      this.wake?.();
    });
    socket.on("close", (code) => {
      this.closeCode = code;
      this.wake?.();
    });
    socket.on("error", () => undefined);
  }

  static open(url: string, token: string, mode: "sentinel" | "next-result"): Promise<ProbedSocket> {
    const socket = new WebSocket(url, { headers: { authorization: `Bearer ${token}` } });
    return new Promise((resolve, reject) => {
      socket.once("open", () => resolve(new ProbedSocket(socket, mode)));
      socket.once("unexpected-response", (_request, response) =>
        reject(new Error(`upgrade refused: ${response.statusCode}`)),
      );
      socket.once("error", reject);
    });
  }

  /** Frames pushed by the server outside any exchange (events, playback.start), drained. */
  takeUnsolicited(): Json[] {
    this.rawPending.splice(0);
    return this.pending.splice(0);
  }

  async exchange(frame: WireFrame, timeoutMs = 5_000): Promise<Exchange> {
    this.takeUnsolicited();
    this.socket.send(frame.text, { binary: frame.binary });
    const marker = randomUUID();
    if (this.mode === "sentinel")
      this.socket.send(JSON.stringify({ type: "voice.cancel", requestId: marker }));
    const done = (frames: Json[]) =>
      this.mode === "sentinel" ? frames.some((answer) => answer.requestId === marker) : frames.some(isAnswer);
    const deadline = Date.now() + timeoutMs;
    while (!done(this.pending) && this.closeCode === undefined) {
      if (Date.now() > deadline) throw new Error(`no answer to ${frame.text.slice(0, 300)}`);
      await new Promise<void>((resolve) => {
        const timer = setTimeout(resolve, 50);
        this.wake = () => {
          clearTimeout(timer);
          resolve();
        };
      });
    }
    this.wake = undefined;
    const raw = this.rawPending.splice(0).join("\n");
    // Pushed frames (run.update, playback.start) arrive at any time and answer nothing.
    const answers = this.pending
      .splice(0)
      .filter((answer) => answer.requestId !== marker && isAnswer(answer));
    return { answers, raw, ...(this.closeCode === undefined ? {} : { closed: this.closeCode }) };
  }

  close(): void {
    this.socket.close();
  }
}

const isAnswer = (frame: Json) => typeof frame.type === "string" && frame.type.endsWith("_result");

export const frameBytes = (frame: WireFrame) => Buffer.byteLength(frame.text, "utf8");
