import { randomUUID } from "node:crypto";
import {
  playbackRepeatResultSchema,
  playbackStartSchema,
  voiceRequestResultSchema,
} from "../../libs/contract/lamp-wire.js";
import { TestLamp } from "../../test/e2e/test-lamp.js";
import type { PlannedInput } from "./campaign-plan.js";
import { sleep } from "../../libs/timing/sleep.js";

/** How the Lamp answers a playback.start: ack at once, ack late, or never (a lost ack). */
export type AckPolicy = { mode: "prompt" } | { mode: "late"; delayMs: number } | { mode: "never" };

/** One playback.start as the Lamp received it: what would have been spoken. */
export interface ReceivedPlayback {
  deviceId: string;
  playbackId: string;
  resultId: string;
  receivedAt: number;
  /** Which connection of this Lamp carried it (1 = first). */
  connection: number;
  ack: AckPolicy["mode"];
}

export interface RegisteredRun {
  runId: string;
  requestId: string;
  attempts: number;
}

const RETRY_PAUSE_MS = 250;
const SAY_DEADLINE_MS = 120_000;

/**
 * A Lamp under faults: one device over the real WebSocket that reconnects when the OS side goes away (or a fault
 * drops it), resends a voice.request with the same requestId until it is answered (the OS returns the same run),
 * and acks playbacks according to the fault schedule. It keeps every playback.start across all its connections.
 */
export class ChaosLamp {
  readonly received: ReceivedPlayback[] = [];
  readonly repeatPlaybackIds = new Set<string>();
  connections = 0;
  private current: TestLamp | undefined;
  private opening: Promise<void> | undefined;
  private offlineUntil = 0;
  private stopped = false;
  private policy: AckPolicy = { mode: "prompt" };
  private readonly lateAcks = new Set<NodeJS.Timeout>();

  constructor(
    readonly deviceId: string,
    private readonly url: string,
    private readonly token: () => Promise<string>,
  ) {}

  /** Connects (retrying while the device-gateway is down) and keeps the Lamp connected until stop(). */
  async start(): Promise<void> {
    await this.connected();
  }

  setAckPolicy(policy: AckPolicy): void {
    this.policy = policy;
  }

  /** A network drop: the socket dies without a close handshake; the Lamp reconnects after `downMs`. */
  drop(downMs: number): void {
    this.offlineUntil = Date.now() + downMs;
    this.current?.drop();
  }

  /**
   * Sends the voice request until the OS registers it: the identical frame every time (same requestId, same
   * content, as a real Lamp resends it), so the OS returns the one run it registered.
   */
  async say(agentId: string, machineId: string, input: PlannedInput): Promise<RegisteredRun> {
    const requestId = randomUUID();
    const request = {
      type: "voice.request",
      requestId,
      agentId,
      machineId,
      text: input.text,
      voiceTarget: {
        id: input.voiceTargetId,
        expiresAt: new Date(Date.now() + input.expiresInMs).toISOString(),
      },
      replyRoute: input.replyRoute,
    };
    const deadline = Date.now() + SAY_DEADLINE_MS;
    let lastFailure = "";
    for (let attempts = 1; ; attempts++) {
      const lamp = await this.connected();
      const earlier = new Set(lamp.frames);
      lamp.send(request);
      try {
        const frame = await lamp.waitForFrame(
          (candidate) =>
            !earlier.has(candidate) &&
            candidate.type === "voice.request_result" &&
            candidate.requestId === requestId,
          30_000,
        );
        const parsed = voiceRequestResultSchema.safeParse(frame);
        if (parsed.success) return { runId: parsed.data.runId, requestId, attempts };
        lastFailure = JSON.stringify(frame);
      } catch (error) {
        // The connection ended or nothing came back: send the same request again.
        lastFailure = error instanceof Error ? error.message.slice(0, 300) : String(error);
      }
      if (Date.now() > deadline)
        throw new Error(
          `${this.deviceId}: voice.request ${requestId} never registered (last: ${lastFailure})`,
        );
      await sleep(RETRY_PAUSE_MS);
    }
  }

  /** "Say that again": best effort, once; the OS store tells which playbacks were repeats. */
  async askRepeat(resultId: string): Promise<void> {
    const lamp = await this.connected();
    const requestId = randomUUID();
    const earlier = new Set(lamp.frames);
    lamp.send({ type: "playback.repeat", requestId, resultId });
    try {
      const frame = await lamp.waitForFrame(
        (candidate) => !earlier.has(candidate) && candidate.requestId === requestId,
        10_000,
      );
      const parsed = playbackRepeatResultSchema.safeParse(frame);
      if (parsed.success) this.repeatPlaybackIds.add(parsed.data.playbackId);
    } catch {
      // A repeat lost with the connection is simply not spoken.
    }
  }

  stop(): void {
    this.stopped = true;
    for (const timer of this.lateAcks) clearTimeout(timer);
    this.current?.close();
  }

  /** The open connection, (re)connecting first when there is none; one connection attempt at a time. */
  private async connected(): Promise<TestLamp> {
    for (;;) {
      if (this.stopped) throw new Error(`${this.deviceId}: lamp stopped`);
      const lamp = this.current;
      if (lamp && !lamp.closed) return lamp;
      this.opening ??= this.reopen().finally(() => (this.opening = undefined));
      await this.opening;
    }
  }

  private async reopen(): Promise<void> {
    const wait = this.offlineUntil - Date.now();
    if (wait > 0) await sleep(wait);
    try {
      await this.open();
    } catch {
      await sleep(RETRY_PAUSE_MS);
    }
  }

  /** A Lamp stays connected: it reconnects on its own whenever its connection ends. */
  private onClose(): void {
    if (!this.stopped) this.connected().catch(() => undefined);
  }

  private async open(): Promise<void> {
    const connection = this.connections + 1;
    const lamp = await TestLamp.connect({
      url: this.url,
      token: await this.token(),
      ack: false,
      onFrame: (frame) => this.onFrame(frame, connection),
      onClose: () => this.onClose(),
    });
    this.connections = connection;
    this.current = lamp;
  }

  private onFrame(frame: Record<string, unknown>, connection: number): void {
    const start = playbackStartSchema.safeParse(frame);
    if (!start.success) return;
    const policy = this.policy;
    const { playbackId, resultId } = start.data;
    this.received.push({
      deviceId: this.deviceId,
      playbackId,
      resultId,
      receivedAt: Date.now(),
      connection,
      ack: policy.mode,
    });
    if (policy.mode === "prompt") this.ack(playbackId);
    if (policy.mode === "late") {
      const timer = setTimeout(() => {
        this.lateAcks.delete(timer);
        this.ack(playbackId);
      }, policy.delayMs);
      this.lateAcks.add(timer);
    }
  }

  /** Acks on whatever connection is open now (a real Lamp acks after reconnecting); lost if none is. */
  private ack(playbackId: string): void {
    this.current?.send({ type: "playback.ack", playbackId, state: "started" });
    this.current?.send({ type: "playback.ack", playbackId, state: "finished" });
  }
}
