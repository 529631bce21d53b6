import WebSocket from "ws";
import { z } from "zod";
import { playbackStartSchema, type PlaybackStart } from "../../libs/contract/lamp-wire.js";

/** The frames the bench's Lamp acts on; every other frame (run.update, results) is only looked at by type. */
const frameSchema = z.looseObject({ type: z.string() });
const requestErrorSchema = z.looseObject({
  type: z.literal("voice.request_result"),
  error: z.looseObject({ code: z.string() }),
});

export interface BenchLampEvents {
  onPlayback(start: PlaybackStart, receivedAt: number): void;
  onRequestError(code: string): void;
}

/**
 * A Lamp over the real device-gateway WebSocket that only sends voice.requests and, for every playback.start,
 * acks `started` then `finished` at once (a speaker that plays instantly). It keeps no frames: a bench Lamp lives
 * for thousands of results.
 */
export class BenchLamp {
  private constructor(private readonly socket: WebSocket) {}

  static connect(url: string, token: string, events: BenchLampEvents): Promise<BenchLamp> {
    const socket = new WebSocket(url, { headers: { authorization: `Bearer ${token}` } });
    const lamp = new BenchLamp(socket);
    socket.on("message", (data) => {
      const receivedAt = performance.now();
      const frame: unknown = JSON.parse(data.toString());
      const kind = frameSchema.safeParse(frame);
      if (!kind.success) return;
      if (kind.data.type === "playback.start") {
        const start = playbackStartSchema.parse(frame);
        lamp.send({ type: "playback.ack", playbackId: start.playbackId, state: "started" });
        lamp.send({ type: "playback.ack", playbackId: start.playbackId, state: "finished" });
        events.onPlayback(start, receivedAt);
      } else if (kind.data.type === "voice.request_result") {
        const failed = requestErrorSchema.safeParse(frame);
        if (failed.success) events.onRequestError(failed.data.error.code);
      }
    });
    socket.on("error", () => undefined);
    return new Promise((resolve, reject) => {
      socket.once("open", () => resolve(lamp));
      socket.once("error", reject);
      socket.once("unexpected-response", (_request, response) =>
        reject(new Error(`lamp connection refused: HTTP ${response.statusCode}`)),
      );
    });
  }

  say(agentId: string, machineId: string, requestId: string, text: string): void {
    this.send({
      type: "voice.request",
      requestId,
      agentId,
      machineId,
      text,
      voiceTarget: { id: "target-1" },
      replyRoute: "voice",
    });
  }

  close(): void {
    this.socket.terminate();
  }

  private send(frame: Record<string, unknown>): void {
    if (this.socket.readyState === WebSocket.OPEN) this.socket.send(JSON.stringify(frame));
  }
}
