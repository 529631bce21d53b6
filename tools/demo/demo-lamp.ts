import { z } from "zod";
import {
  playbackRepeatResultSchema,
  playbackStartSchema,
  voiceRequestResultSchema,
  type PlaybackStart,
} from "../../libs/contract/lamp-wire.js";
import { runUpdateFrameSchema, type RunUpdateFrame } from "../../libs/contract/run-update.js";
import { LampSim } from "../lamp-sim/lamp-sim.js";
import type { Speaker } from "../lamp-sim/speaker.js";
import { DEMO_MACHINE } from "./demo-agents.js";

export const VOICE_TARGET = "kitchen";

/** What the Lamp played (lamp-sim's `played` event): the playback and the file its speech went to. */
const playedSchema = z.object({
  playbackId: z.string(),
  resultId: z.string(),
  text: z.string(),
  file: z.string(),
});
export type Played = z.infer<typeof playedSchema>;

/** A step waited for something that never came; `what` says what it was waiting for. */
export class NotReached extends Error {
  constructor(readonly what: string) {
    super(`not reached: ${what}`);
  }
}

/** Re-checked on every frame; true once it is satisfied (and done). */
type Waiter = () => boolean;

/**
 * The demo's Lamp: lamp-sim over the real WebSocket, with everything it received kept so each step can wait for
 * the state it expects (an event, never a fixed pause) and the story can be checked at the end.
 */
export class DemoLamp {
  readonly runUpdates: RunUpdateFrame[] = [];
  readonly playbackStarts: PlaybackStart[] = [];
  readonly played: Played[] = [];
  private readonly answers = new Map<string, unknown>();
  private readonly waiters = new Set<Waiter>();
  private readonly sim: LampSim;

  constructor(url: string, token: string, speaker: Speaker) {
    this.sim = new LampSim({
      url,
      token,
      speaker,
      faults: { dropAcks: false, disconnectAfterReceive: false, reject: false, slowMs: 0 },
      emit: (event, fields) => this.record(event, fields ?? {}),
    });
  }

  connect(): Promise<void> {
    return this.sim.connect();
  }

  close(): Promise<number> {
    this.sim.finish(0);
    return this.sim.exited;
  }

  /** From now on the Lamp plays what it gets but its acks never reach the OS. */
  loseAcks(lose: boolean): void {
    this.sim.setFaults({ dropAcks: lose });
  }

  /** A voice.request; resolves with its run once the OS answered it. */
  async say(agentId: string, text: string, timeoutMs: number): Promise<{ runId: string; requestId: string }> {
    const requestId = this.sim.say({
      say: text,
      agent: agentId,
      machine: DEMO_MACHINE,
      route: "voice",
      target: VOICE_TARGET,
    });
    const answer = await this.until(`an answer to "${text}"`, timeoutMs, () => this.answers.get(requestId));
    const parsed = voiceRequestResultSchema.safeParse(answer);
    if (!parsed.success)
      throw new NotReached(`a run for "${text}" (the OS answered ${JSON.stringify(answer)})`);
    return { runId: parsed.data.runId, requestId };
  }

  /** "Say that again": resolves with the new playback's id once the OS accepted it. */
  async repeat(resultId: string, timeoutMs: number): Promise<string> {
    const requestId = this.sim.repeat(resultId);
    const answer = await this.until("the OS to accept the repeat", timeoutMs, () =>
      this.answers.get(requestId),
    );
    const parsed = playbackRepeatResultSchema.safeParse(answer);
    if (!parsed.success)
      throw new NotReached(`a repeat of ${resultId} (the OS answered ${JSON.stringify(answer)})`);
    return parsed.data.playbackId;
  }

  /** Resolves with `find()`'s first defined value, re-checked on every frame; NotReached after `timeoutMs`. */
  until<T>(what: string, timeoutMs: number, find: () => T | undefined): Promise<T> {
    const now = find();
    if (now !== undefined) return Promise.resolve(now);
    return new Promise<T>((resolve, reject) => {
      const waiter: Waiter = () => {
        const found = find();
        if (found === undefined) return false;
        clearTimeout(timer);
        resolve(found);
        return true;
      };
      const timer = setTimeout(() => {
        this.waiters.delete(waiter);
        reject(new NotReached(what));
      }, timeoutMs);
      this.waiters.add(waiter);
    });
  }

  updatesOf(runId: string): RunUpdateFrame[] {
    return this.runUpdates.filter((update) => update.runId === runId);
  }

  latestUpdateOf(runId: string, change?: RunUpdateFrame["change"]): RunUpdateFrame | undefined {
    return this.updatesOf(runId)
      .filter((update) => change === undefined || update.change === change)
      .at(-1);
  }

  playedFor(resultId: string): Played[] {
    return this.played.filter((played) => played.resultId === resultId);
  }

  private record(event: string, fields: Record<string, unknown>): void {
    if (event === "received") this.receive(fields.frame);
    if (event === "played") this.played.push(playedSchema.parse(fields));
    for (const waiter of [...this.waiters]) if (waiter()) this.waiters.delete(waiter);
  }

  private receive(frame: unknown): void {
    const update = runUpdateFrameSchema.safeParse(frame);
    if (update.success) {
      this.runUpdates.push(update.data);
      return;
    }
    const start = playbackStartSchema.safeParse(frame);
    if (start.success) {
      this.playbackStarts.push(start.data);
      return;
    }
    const requestId = (frame as { requestId?: unknown }).requestId;
    if (typeof requestId === "string") this.answers.set(requestId, frame);
  }
}
