import { randomUUID } from "node:crypto";
import {
  lampErrorResultSchema,
  playbackRepeatResultSchema,
  playbackStartSchema,
  runUpdatesSinceResultSchema,
  voiceCancelResultSchema,
  voiceRequestResultSchema,
} from "../../libs/contract/lamp-wire.js";
import { runUpdateFrameSchema, type RunUpdateFrame } from "../../libs/contract/run-update.js";
import { sleep } from "../../libs/timing/sleep.js";
import { TestLamp } from "../../test/e2e/test-lamp.js";
import type { PlannedInput } from "./campaign-plan.js";

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

/**
 * What one connection of a Lamp carried of its run.update feed, in arrival order: the updates, the answer to the
 * `run.updates_since` it sent on opening (the replay follows that answer), or an error answer to it.
 */
export type FeedEvent =
  | { kind: "update"; connection: number; receivedAt: number; update: RunUpdateFrame }
  | {
      kind: "replay";
      connection: number;
      receivedAt: number;
      requestId: string;
      after: number;
      head: number;
      truncated: boolean;
    }
  | { kind: "replay-refused"; connection: number; receivedAt: number; requestId: string; code: string };

/** A `run.updates_since` the Lamp sent when a connection opened. */
export interface ReplayRequest {
  connection: number;
  requestId: string;
  after: number;
  sentAt: number;
}

/** A frame of a type the Lamp knows that did not match its contract schema. */
export interface MalformedFrame {
  deviceId: string;
  connection: number;
  frame: string;
  error: string;
}

export interface RegisteredRun {
  runId: string;
  requestId: string;
  attempts: number;
}

export type CancelAnswer = "cancelled" | "not_found";

/** How the Lamp goes away: a network drop (no close handshake) or a clean close (the Lamp switched off). */
export type DisconnectEnding = "drop" | "close";

const RETRY_PAUSE_MS = 250;
const REQUEST_DEADLINE_MS = 120_000;
const ANSWER_TIMEOUT_MS = 30_000;
/** A `run.updates_since` unanswered this long on an open connection is sent again (the first stays on record). */
const REPLAY_RETRY_MS = 5_000;

/** Answers a frame with a value, or says to send the request again (with what came back). */
type AnswerReading<T> = { done: true; value: T } | { done: false; failure: string };

interface UpdateWaiter {
  match: (update: RunUpdateFrame) => boolean;
  wake: (update: RunUpdateFrame | undefined) => void;
}

/**
 * A Lamp under faults: one device over the real WebSocket that reconnects when the OS side goes away (or a fault
 * drops it), resends a request with the same requestId until it is answered (the OS returns the same run), and acks
 * playbacks according to the fault schedule. Every connection it opens starts with `run.updates_since` naming the
 * last updateId it saw. It keeps every playback.start and every run.update feed event across all its connections.
 */
export class ChaosLamp {
  readonly received: ReceivedPlayback[] = [];
  readonly repeatPlaybackIds = new Set<string>();
  readonly feed: FeedEvent[] = [];
  readonly replayRequests: ReplayRequest[] = [];
  readonly malformed: MalformedFrame[] = [];
  /** Every voice.request requestId this Lamp sent: its own runs, as it knows them. */
  readonly requestIds = new Set<string>();
  /** When each connection ended (connection number → epoch ms); an open one has no entry. */
  readonly connectionEnds = new Map<number, number>();
  connections = 0;
  /** The highest updateId handled, the `after` of the next run.updates_since. */
  lastUpdateId = 0;
  private current: TestLamp | undefined;
  private opening: Promise<void> | undefined;
  private offlineUntil = 0;
  private stopped = false;
  private policy: AckPolicy = { mode: "prompt" };
  private readonly lateAcks = new Set<NodeJS.Timeout>();
  private readonly updateWaiters = new Set<UpdateWaiter>();
  /** Which of `urls` the next connection goes to. */
  private gateway = 0;

  /** `urls`: the device-gateways' Lamp WebSockets; a refused connection moves on to the next, as behind a balancer. */
  constructor(
    readonly deviceId: string,
    private readonly urls: readonly string[],
    private readonly token: () => Promise<string>,
  ) {}

  /** Connects (retrying while the device-gateway is down) and keeps the Lamp connected until stop(). */
  async start(): Promise<void> {
    await this.connected();
  }

  setAckPolicy(policy: AckPolicy): void {
    this.policy = policy;
  }

  /** The Lamp goes away now and reconnects (resuming its run.update feed) after `downMs`. */
  disconnect(downMs: number, ending: DisconnectEnding): void {
    this.offlineUntil = Date.now() + downMs;
    if (ending === "drop") this.current?.drop();
    else this.current?.close();
  }

  /**
   * Sends the voice request until the OS registers it: the identical frame every time (same requestId, same
   * content, the expiry fixed when it is first sent, as a real Lamp resends it), so the OS returns the one run.
   */
  async say(agentId: string, machineId: string, input: PlannedInput): Promise<RegisteredRun> {
    const requestId = randomUUID();
    this.requestIds.add(requestId);
    let request: Record<string, unknown> | undefined;
    const frame = () =>
      (request ??= {
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
      });
    const { value, attempts } = await this.untilAnswered(`voice.request ${requestId}`, frame, (answer) => {
      const parsed = voiceRequestResultSchema.safeParse(answer);
      return parsed.success
        ? { done: true, value: parsed.data.runId }
        : { done: false, failure: JSON.stringify(answer) };
    });
    return { runId: value, requestId, attempts };
  }

  /** Cancels the run, resending (a repeated cancel changes nothing) until the OS answers. */
  async cancel(runId: string): Promise<CancelAnswer> {
    const { value } = await this.untilAnswered(
      `voice.cancel ${runId}`,
      () => ({ type: "voice.cancel", requestId: randomUUID(), runId }),
      (answer): AnswerReading<CancelAnswer> => {
        const parsed = voiceCancelResultSchema.safeParse(answer);
        if (parsed.success) return { done: true, value: "cancelled" };
        const refused = lampErrorResultSchema.safeParse(answer);
        if (refused.success && refused.data.error.code === "NOT_FOUND")
          return { done: true, value: "not_found" };
        return { done: false, failure: JSON.stringify(answer) };
      },
    );
    return value;
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

  /** The first run.update (already received or still to come) that matches; undefined after `timeoutMs`. */
  runUpdate(
    match: (update: RunUpdateFrame) => boolean,
    timeoutMs: number,
  ): Promise<RunUpdateFrame | undefined> {
    const seen = this.feed.find((event) => event.kind === "update" && match(event.update));
    if (seen?.kind === "update") return Promise.resolve(seen.update);
    return new Promise((resolve) => {
      const waiter: UpdateWaiter = {
        match,
        wake: (update) => {
          clearTimeout(timer);
          this.updateWaiters.delete(waiter);
          resolve(update);
        },
      };
      const timer = setTimeout(() => waiter.wake(undefined), timeoutMs);
      this.updateWaiters.add(waiter);
    });
  }

  stop(): void {
    this.stopped = true;
    for (const timer of this.lateAcks) clearTimeout(timer);
    for (const waiter of [...this.updateWaiters]) waiter.wake(undefined);
    this.current?.close();
  }

  /**
   * Sends a request on the open connection (reconnecting first when there is none) until `read` accepts the
   * answer; the same frame again after a lost connection, a timeout or an answer `read` does not accept.
   */
  private async untilAnswered<T>(
    label: string,
    frame: () => Record<string, unknown>,
    read: (answer: Record<string, unknown>) => AnswerReading<T>,
  ): Promise<{ value: T; attempts: number }> {
    const deadline = Date.now() + REQUEST_DEADLINE_MS;
    let lastFailure = "";
    for (let attempts = 1; ; attempts++) {
      const lamp = await this.connected();
      const earlier = new Set(lamp.frames);
      const request = frame();
      lamp.send(request);
      try {
        const answer = await lamp.waitForFrame(
          (candidate) =>
            !earlier.has(candidate) &&
            candidate.type === `${String(request.type)}_result` &&
            candidate.requestId === request.requestId,
          ANSWER_TIMEOUT_MS,
        );
        const reading = read(answer);
        if (reading.done) return { value: reading.value, attempts };
        lastFailure = reading.failure;
      } catch (error) {
        // The connection ended or nothing came back: send the same request again.
        lastFailure = error instanceof Error ? error.message.slice(0, 300) : String(error);
      }
      if (Date.now() > deadline)
        throw new Error(`${this.deviceId}: ${label} never answered (last: ${lastFailure})`);
      await sleep(RETRY_PAUSE_MS);
    }
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
      this.gateway = (this.gateway + 1) % this.urls.length;
      await sleep(RETRY_PAUSE_MS);
    }
  }

  /** A Lamp stays connected: it reconnects on its own whenever its connection ends. */
  private onClose(connection: number): void {
    this.connectionEnds.set(connection, Date.now());
    if (!this.stopped) this.connected().catch(() => undefined);
  }

  private async open(): Promise<void> {
    const connection = this.connections + 1;
    const url = this.urls[this.gateway];
    if (url === undefined) throw new Error(`${this.deviceId}: no device-gateway to connect to`);
    const lamp = await TestLamp.connect({
      url,
      token: await this.token(),
      ack: false,
      onFrame: (frame) => this.onFrame(frame, connection),
      onClose: () => this.onClose(connection),
    });
    this.connections = connection;
    this.current = lamp;
    this.resumeFeed(lamp, connection);
  }

  /**
   * Asks for everything after the last update handled; the answer and the replay arrive on this connection. Left
   * unanswered, the request is sent again, as a real Lamp would.
   */
  private resumeFeed(lamp: TestLamp, connection: number): void {
    const request = { requestId: randomUUID(), after: this.lastUpdateId };
    this.replayRequests.push({ connection, ...request, sentAt: Date.now() });
    lamp.send({ type: "run.updates_since", ...request });
    const retry = setTimeout(() => {
      if (!lamp.closed && this.current === lamp && !this.answered(request.requestId))
        this.resumeFeed(lamp, connection);
    }, REPLAY_RETRY_MS);
    retry.unref();
  }

  private answered(requestId: string): boolean {
    return this.feed.some((event) => event.kind !== "update" && event.requestId === requestId);
  }

  private onFrame(frame: Record<string, unknown>, connection: number): void {
    if (frame.type === "run.update") return this.onRunUpdate(frame, connection);
    if (frame.type === "run.updates_since_result") return this.onReplayAnswer(frame, connection);
    if (frame.type === "playback.start") return this.onPlaybackStart(frame, connection);
  }

  private onRunUpdate(frame: Record<string, unknown>, connection: number): void {
    const parsed = runUpdateFrameSchema.safeParse(frame);
    if (!parsed.success) return this.recordMalformed(frame, connection, parsed.error.message);
    const update = parsed.data;
    this.feed.push({ kind: "update", connection, receivedAt: Date.now(), update });
    this.lastUpdateId = Math.max(this.lastUpdateId, update.updateId);
    for (const waiter of [...this.updateWaiters]) if (waiter.match(update)) waiter.wake(update);
  }

  private onReplayAnswer(frame: Record<string, unknown>, connection: number): void {
    const receivedAt = Date.now();
    const answer = runUpdatesSinceResultSchema.safeParse(frame);
    if (answer.success) {
      const { requestId, after, head, truncated } = answer.data;
      this.feed.push({ kind: "replay", connection, receivedAt, requestId, after, head, truncated });
      return;
    }
    const refused = lampErrorResultSchema.safeParse(frame);
    if (!refused.success) return this.recordMalformed(frame, connection, answer.error.message);
    const requestId = refused.data.requestId ?? "";
    this.feed.push({
      kind: "replay-refused",
      connection,
      receivedAt,
      requestId,
      code: refused.data.error.code,
    });
    // Refused (e.g. UNAVAILABLE while Redis restarts): ask again on this connection, as a real Lamp would.
    const lamp = this.current;
    void sleep(RETRY_PAUSE_MS).then(() => {
      if (lamp && !lamp.closed && this.current === lamp) this.resumeFeed(lamp, connection);
    });
  }

  private onPlaybackStart(frame: Record<string, unknown>, connection: number): void {
    const start = playbackStartSchema.safeParse(frame);
    if (!start.success) return this.recordMalformed(frame, connection, start.error.message);
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

  private recordMalformed(frame: Record<string, unknown>, connection: number, error: string): void {
    this.malformed.push({
      deviceId: this.deviceId,
      connection,
      frame: JSON.stringify(frame).slice(0, 500),
      error: error.slice(0, 500),
    });
  }

  /** Acks on whatever connection is open now (a real Lamp acks after reconnecting); lost if none is. */
  private ack(playbackId: string): void {
    this.current?.send({ type: "playback.ack", playbackId, state: "started" });
    this.current?.send({ type: "playback.ack", playbackId, state: "finished" });
  }
}
