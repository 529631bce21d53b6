import { randomUUID } from "node:crypto";
import type { PlaybackStart } from "../../libs/contract/lamp-wire.js";
import { sleep } from "../../libs/timing/sleep.js";
import { parseAnswer } from "./bench-scenarios.js";
import type { BenchLamp } from "./bench-lamp.js";
import type { BenchAgents } from "./lampline-stack.js";
import { LatencyHistogram, type LatencySummary } from "./latency.js";

/** One result asked for: 1 input to a single-answer agent, or 2–3 inputs steered into one turn of a steered agent. */
interface Group {
  name: string;
  window: number;
  inputs: number;
  /** performance.now() when its first voice.request was sent. */
  sentAt: number;
  steeredAgent?: string;
  done: boolean;
}

/** What one offered load achieved. */
export interface LoadFigures {
  offeredPerSecond: number;
  seconds: number;
  /** Results spoken per second in the measured part of the window. */
  sustainedPerSecond: number;
  results: number;
  groupsSent: number;
  inputsSent: number;
  steeredShare: number;
  /** Groups of the window never spoken by the end of the drain. */
  lost: number;
  /** Every answer spoken from the window's start to the end of its drain (earlier windows' backlog included). */
  spoken: number;
  requestErrors: Record<string, number>;
  requestToPlayback: LatencySummary;
  completionToPlayback: LatencySummary;
}

const STEERED_EVERY = 4;
const STEER_TIMEOUT_MS = 30_000;
const TICK_MS = 5;
/** After a window, the next starts once no answer at all was spoken for QUIET_MS (at most QUIET_CAP_MS later). */
const QUIET_MS = 3_000;
const QUIET_CAP_MS = 60_000;

/**
 * Offers results at a fixed rate for a bounded time, whatever the system answers (open loop): every tick sends the
 * groups due by now, round-robin over the Lamps and the single-answer agents; every STEERED_EVERY-th group is a
 * steered group (2 or 3 inputs sent back to back from one Lamp to an idle steered agent, which answers them with one
 * turn) when such an agent is idle, otherwise a single input. A group is done when its answer's playback.start
 * reaches the Lamp (matched by the group name the answer carries).
 */
export class LoadGenerator {
  private readonly groups = new Map<string, Group>();
  private readonly busySteered = new Map<string, number>();
  private readonly errors = new Map<string, number>();
  private window = 0;
  private measuring: { from: number; to: number; results: number } | undefined;
  private requestLatency = new LatencyHistogram();
  private completionLatency = new LatencyHistogram();
  private sequence = 0;
  private spoken = 0;
  private lastPlaybackAt = 0;
  private lampCursor = 0;
  private singleCursor = 0;
  private steeredCursor = 0;

  constructor(
    private readonly agents: BenchAgents,
    private readonly machineId: string,
  ) {}

  private lamps: BenchLamp[] = [];

  attach(lamps: BenchLamp[]): void {
    this.lamps = lamps;
  }

  onPlayback(start: PlaybackStart, receivedAt: number): void {
    const wallClock = Date.now();
    this.spoken += 1;
    this.lastPlaybackAt = receivedAt;
    const answer = parseAnswer(start.text);
    const group = answer && this.groups.get(answer.group);
    if (!answer || !group || group.done) return;
    group.done = true;
    this.groups.delete(group.name);
    if (group.steeredAgent) this.busySteered.delete(group.steeredAgent);
    if (group.window !== this.window) return;
    const measuring = this.measuring;
    if (measuring && receivedAt >= measuring.from && receivedAt <= measuring.to) measuring.results += 1;
    if (measuring && group.sentAt >= measuring.from) {
      this.requestLatency.recordMs(receivedAt - group.sentAt);
      this.completionLatency.recordMs(wallClock - answer.completedAt);
    }
  }

  onRequestError(code: string): void {
    this.errors.set(code, (this.errors.get(code) ?? 0) + 1);
  }

  /**
   * Offers `perSecond` results for `seconds`; the first `warmUpSeconds` are not measured. Afterwards waits up to
   * `drainMs` for the window's groups to be spoken, then until the system is quiet (an overloaded window leaves a
   * backlog the system keeps working through), so the next load starts on an idle system.
   */
  async offer(
    perSecond: number,
    seconds: number,
    warmUpSeconds: number,
    drainMs: number,
  ): Promise<LoadFigures> {
    this.window += 1;
    this.requestLatency = new LatencyHistogram();
    this.completionLatency = new LatencyHistogram();
    this.errors.clear();
    const spokenBefore = this.spoken;
    const started = performance.now();
    const end = started + seconds * 1000;
    this.measuring = { from: started + warmUpSeconds * 1000, to: end, results: 0 };
    let sent = 0;
    let inputs = 0;
    let steered = 0;
    while (performance.now() < end) {
      const due = Math.floor(((performance.now() - started) / 1000) * perSecond);
      for (; sent < due; sent++) {
        const group = this.send();
        inputs += group.inputs;
        if (group.steeredAgent) steered += 1;
      }
      await sleep(TICK_MS);
    }
    const measuring = this.measuring;
    const measuredSeconds = (measuring.to - measuring.from) / 1000;
    const window = this.window;
    const pending = () => [...this.groups.values()].filter((group) => group.window === window).length;
    const drainUntil = performance.now() + drainMs;
    while (pending() > 0 && performance.now() < drainUntil) await sleep(50);
    const lost = pending();
    const quietUntil = performance.now() + QUIET_CAP_MS;
    while (performance.now() - this.lastPlaybackAt < QUIET_MS && performance.now() < quietUntil)
      await sleep(100);
    for (const group of [...this.groups.values()]) if (group.window === window) this.forget(group);
    return {
      offeredPerSecond: perSecond,
      seconds,
      sustainedPerSecond: round(measuring.results / measuredSeconds),
      results: measuring.results,
      groupsSent: sent,
      inputsSent: inputs,
      steeredShare: sent === 0 ? 0 : round(steered / sent),
      lost,
      spoken: this.spoken - spokenBefore,
      requestErrors: Object.fromEntries(this.errors),
      requestToPlayback: this.requestLatency.summary(),
      completionToPlayback: this.completionLatency.summary(),
    };
  }

  /** Groups still waiting for their answer (any window). */
  get inFlight(): number {
    return this.groups.size;
  }

  private send(): Group {
    this.sequence += 1;
    const name = `g${this.sequence}x${randomUUID().slice(0, 8)}`;
    const lamp = this.lamps[this.lampCursor++ % this.lamps.length] as BenchLamp;
    const steeredAgent = this.sequence % STEERED_EVERY === 0 ? this.idleSteeredAgent() : undefined;
    const size = steeredAgent === undefined ? 1 : this.agents.groupsOf2.includes(steeredAgent) ? 2 : 3;
    const agentId =
      steeredAgent ?? (this.agents.single[this.singleCursor++ % this.agents.single.length] as string);
    const group: Group = {
      name,
      window: this.window,
      inputs: size,
      sentAt: performance.now(),
      done: false,
      ...(steeredAgent ? { steeredAgent } : {}),
    };
    this.groups.set(name, group);
    if (steeredAgent) this.busySteered.set(steeredAgent, performance.now());
    for (let input = 0; input < size; input++)
      lamp.say(agentId, this.machineId, randomUUID(), input === 0 ? name : `${name} part ${input + 1}`);
    return group;
  }

  /** A steered agent with no group in flight; one whose group got no answer for long is taken as free again. */
  private idleSteeredAgent(): string | undefined {
    const now = performance.now();
    const steered = [...this.agents.groupsOf2, ...this.agents.groupsOf3];
    for (let k = 0; k < steered.length; k++) {
      const agentId = steered[(this.steeredCursor + k) % steered.length] as string;
      const since = this.busySteered.get(agentId);
      if (since !== undefined && now - since <= STEER_TIMEOUT_MS) continue;
      this.steeredCursor += k + 1;
      return agentId;
    }
    return undefined;
  }

  private forget(group: Group): void {
    this.groups.delete(group.name);
    if (group.steeredAgent) this.busySteered.delete(group.steeredAgent);
  }
}

const round = (value: number) => Math.round(value * 100) / 100;
