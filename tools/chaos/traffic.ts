import type { RedisClient } from "../../libs/redis/redis-client.js";
import { OsDeviceKeys } from "../../libs/os-store/os-keys.js";
import type { Keyspace } from "../../libs/redis/keyspace.js";
import { MACHINE } from "../../test/e2e/stack.js";
import type { AnswerStyle, CampaignPlan, CancelMoment, PlannedInput, PlannedTurn } from "./campaign-plan.js";
import type { CancelAnswer, ChaosLamp } from "./chaos-lamp.js";
import { sleep } from "../../libs/timing/sleep.js";
import { errorMessage } from "../../libs/errors/error-message.js";

/** Turns started so far: the clock the fault schedule fires on. */
export class TrafficProgress {
  turnsStarted = 0;
  private readonly waiters: Array<{ turn: number; wake: () => void }> = [];

  turnStarted(): void {
    this.turnsStarted++;
    for (const waiter of this.waiters.filter((candidate) => candidate.turn <= this.turnsStarted)) {
      this.waiters.splice(this.waiters.indexOf(waiter), 1);
      waiter.wake();
    }
  }

  /** Resolves once `turn` turns have started (or at once when the traffic already got that far). */
  reached(turn: number): Promise<void> {
    if (turn <= this.turnsStarted) return Promise.resolve();
    return new Promise((wake) => this.waiters.push({ turn, wake }));
  }

  /** Releases every waiter (the traffic ended). */
  finish(): void {
    this.turnsStarted = Number.MAX_SAFE_INTEGER;
    for (const waiter of this.waiters.splice(0)) waiter.wake();
  }
}

export interface SentInput {
  deviceId: string;
  agentId: string;
  runId: string;
  requestId: string;
  text: string;
  turn: number;
  /** Sent to re-align a steering/queueing engine that waits for a partner after a fault lost an input. */
  filler: boolean;
  attempts: number;
}

/** A voice.cancel the user sent, with the OS's answer (`unanswered`: the Lamp gave up resending it). */
export interface SentCancel {
  deviceId: string;
  runId: string;
  turn: number;
  moment: CancelMoment;
  answer: CancelAnswer | "unanswered";
  requestedAt: number;
}

export interface TrafficFigures {
  inputs: SentInput[];
  cancels: SentCancel[];
  /** Voice requests the OS never answered within the Lamp's deadline (the turn was abandoned). */
  unregistered: string[];
  turnsTimedOut: number;
  fillers: number;
  repeatsAsked: number;
}

const TURN_SETTLE_MS = 20_000;
const FILLER_SETTLE_MS = 15_000;
const MAX_FILLERS = 2;

/**
 * The voice traffic: one lane per agent plays that agent's turns in plan order (a turn waits until its runs
 * settle, so a steering pair reaches the engine as a pair); lanes run in parallel across agents and devices.
 */
export class TrafficGenerator {
  private readonly figures: TrafficFigures = {
    inputs: [],
    cancels: [],
    unregistered: [],
    turnsTimedOut: 0,
    fillers: 0,
    repeatsAsked: 0,
  };
  private readonly styles: Map<string, AnswerStyle>;

  constructor(
    private readonly plan: CampaignPlan,
    private readonly lamps: Map<string, ChaosLamp>,
    private readonly redis: RedisClient,
    private readonly keys: Keyspace,
    private readonly progress: TrafficProgress,
  ) {
    this.styles = new Map(plan.agents.map((agent) => [agent.agentId, agent.style]));
  }

  async run(): Promise<TrafficFigures> {
    const lanes = new Map<string, PlannedTurn[]>();
    for (const turn of this.plan.turns) lanes.set(turn.agentId, [...(lanes.get(turn.agentId) ?? []), turn]);
    await Promise.all([...lanes.values()].map((turns) => this.playLane(turns)));
    return this.figures;
  }

  private async playLane(turns: PlannedTurn[]): Promise<void> {
    for (const turn of turns) {
      this.progress.turnStarted();
      const sent: SentInput[] = [];
      for (const input of turn.inputs) {
        const one = await this.send(turn, input, false);
        if (one) sent.push(one);
      }
      await this.cancelPlanned(turn, sent);
      if (await this.settled(sent, TURN_SETTLE_MS)) {
        if (turn.askRepeat) await this.askRepeat(turn, sent);
        continue;
      }
      this.figures.turnsTimedOut++;
      if (this.styles.get(turn.agentId) !== "each") await this.realign(turn, sent);
    }
  }

  /**
   * The turn's planned cancel, once its inputs are sent (a pair still reaches the engine back to back): at once
   * for `pending`; for `after-result`, the moment the Lamp hears the run resolved (or gives up waiting for it).
   */
  private async cancelPlanned(turn: PlannedTurn, sent: SentInput[]): Promise<void> {
    const planned = turn.cancel;
    const target = planned && sent.find((input) => input.text === turn.inputs[planned.input]?.text);
    if (!planned || !target) return;
    const lamp = this.lamp(turn.deviceId);
    if (planned.moment === "after-result")
      await lamp.runUpdate(
        (update) => update.runId === target.runId && update.state === "resolved",
        TURN_SETTLE_MS,
      );
    const requestedAt = Date.now();
    const answer = await lamp.cancel(target.runId).catch(() => "unanswered" as const);
    this.figures.cancels.push({
      deviceId: turn.deviceId,
      runId: target.runId,
      turn: turn.index,
      moment: planned.moment,
      answer,
      requestedAt,
    });
  }

  /**
   * A pair engine that lost one input to a fault waits for a partner and would pair every later input with the
   * wrong one; single filler inputs complete the open pair so the lane's turns line up with the engine again.
   */
  private async realign(turn: PlannedTurn, sent: SentInput[]): Promise<void> {
    const open = [...sent];
    for (let k = 1; k <= MAX_FILLERS; k++) {
      const filler = await this.send(
        turn,
        { ...(turn.inputs[0] as PlannedInput), text: `${turn.inputs[0]?.text ?? ""} (filler ${k})` },
        true,
      );
      this.figures.fillers++;
      if (filler) open.push(filler);
      if (await this.settled(open, FILLER_SETTLE_MS)) return;
    }
  }

  private async send(
    turn: PlannedTurn,
    input: PlannedInput,
    filler: boolean,
  ): Promise<SentInput | undefined> {
    const lamp = this.lamp(turn.deviceId);
    const run = await lamp.say(turn.agentId, MACHINE, input).catch((error: unknown) => {
      this.figures.unregistered.push(errorMessage(error));
      return undefined;
    });
    if (!run) return undefined;
    const sent: SentInput = {
      deviceId: turn.deviceId,
      agentId: turn.agentId,
      runId: run.runId,
      requestId: run.requestId,
      text: input.text,
      turn: turn.index,
      filler,
      attempts: run.attempts,
    };
    this.figures.inputs.push(sent);
    return sent;
  }

  /**
   * True once every run is resolved, or the Harness has given up on it (receipt `unknown`/`rejected`: the input
   * died with an engine runtime or was refused, and no result will come).
   */
  private async settled(inputs: SentInput[], timeoutMs: number): Promise<boolean> {
    const deadline = Date.now() + timeoutMs;
    for (;;) {
      const states = await Promise.all(inputs.map((input) => this.runSettled(input)));
      if (states.every(Boolean)) return true;
      if (Date.now() > deadline) return false;
      await sleep(150);
    }
  }

  private async runSettled(input: SentInput): Promise<boolean> {
    try {
      const [state, receiptState] = await this.redis.hmget(
        new OsDeviceKeys(this.keys, input.deviceId).run(input.runId),
        "state",
        "receiptState",
      );
      return state !== "pending" || receiptState === "unknown" || receiptState === "rejected";
    } catch {
      return false; // Redis is restarting: not settled yet.
    }
  }

  private async askRepeat(turn: PlannedTurn, sent: SentInput[]): Promise<void> {
    const last = sent.at(-1);
    if (!last) return;
    const resultId = await this.redis
      .hget(new OsDeviceKeys(this.keys, last.deviceId).run(last.runId), "resultId")
      .catch(() => null);
    if (!resultId) return;
    this.figures.repeatsAsked++;
    await this.lamp(turn.deviceId).askRepeat(resultId);
  }

  private lamp(deviceId: string): ChaosLamp {
    const lamp = this.lamps.get(deviceId);
    if (!lamp) throw new Error(`no lamp for ${deviceId}`);
    return lamp;
  }
}
