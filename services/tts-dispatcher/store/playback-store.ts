import type { RedisClient } from "../../../libs/redis/redis-client.js";
import { z } from "zod";
import {
  outboxEntrySchema,
  type OutboxEntry,
  type PlaybackKind,
  type PlaybackReason,
  type PlaybackState,
  playbackKindSchema,
  playbackReasonSchema,
  playbackStateSchema,
} from "../../../libs/contract/os-playback.js";
import { OsDeviceKeys } from "../../../libs/os-store/os-keys.js";
import type { Keyspace } from "../../../libs/redis/keyspace.js";
import { LuaScript } from "../../../libs/redis/lua-script.js";
import { playbackAcksChannel } from "../playback/ack-notices.js";

export interface NewOutboxEntry {
  deviceId: string;
  resultKey: string;
  resultId: string;
  state: "queued" | "suppressed";
  reason?: PlaybackReason;
  speechText: string;
  voiceTargetId?: string;
  voiceTargetExpiresAt?: number;
  newestRunId?: string;
  /** Set when the answer is to be spoken. */
  playbackId?: string;
  notice?: { playbackId: string; text: string };
}

export interface OutboxCreation {
  created: boolean;
  state: PlaybackState;
  playbackId?: string;
  notice?: { playbackId: string; state: PlaybackState };
}

export interface NewRepeatPlayback {
  deviceId: string;
  playbackId: string;
  resultKey: string;
  resultId: string;
  state: "queued" | "suppressed";
  reason?: PlaybackReason;
  voiceTargetId: string;
  text: string;
}

export type StepOperation =
  | {
      op: "claim";
      /** The gateway instance the presence key named while it had no heartbeat ("" when none). */
      deadGateway: string;
      /** With no Lamp, check again after at most this long (sooner when the voice target expires first). */
      offlineRecheckMs: number;
      /** How long after its request a repeat may wait for the Lamp before it ends `failed` / `lamp_offline`. */
      repeatWaitMs: number;
    }
  | { op: "ack-timeout" }
  | { op: "abandon" }
  | { op: "ack"; ack: "started" | "finished" | "interrupted" | "rejected" };

const stepResultSchema = z
  .tuple([
    z.enum(["moved", "settled", "offline", "behind", "stale", "recorded", "invalid", "unknown"]),
    z.union([playbackStateSchema, z.literal("")]),
    z.union([playbackReasonSchema, z.literal("")]),
    z.union([playbackKindSchema, z.literal("")]),
    z.string(),
    z.union([z.string().regex(/^\d+$/).transform(Number), z.literal("")]),
    z.string(),
    // A claim that moved to sending: resultKey, resultId, voiceTargetId, text.
    z.string().min(1).optional(),
    z.string().min(1).optional(),
    z.string().min(1).optional(),
    z.string().optional(),
  ])
  .transform(([verdict, state, reason, kind, gatewayId, waitUntil, related, ...send]) => ({
    verdict,
    state: state || undefined,
    reason: reason || undefined,
    kind: kind || undefined,
    gatewayId: gatewayId || undefined,
    /** With `offline`: when the job checks for the Lamp again; with `behind`: when its wait ends (epoch ms). */
    waitUntil: waitUntil === "" ? undefined : waitUntil,
    /** With `behind`: the resultKey of the earlier-routed result it waits for. */
    waitingFor: verdict === "behind" && related !== "" ? related : undefined,
    /** With `moved`: the playback now first in the device's speech order, whose job may wait behind this one. */
    wake: verdict === "moved" && related !== "" ? related : undefined,
    /** With a claim that moved to sending: the playback.start to send, so the worker need not read the playback. */
    send: sendOf(kind || undefined, send),
  }))
  .refine(
    (step) => (step.verdict === "offline" || step.verdict === "behind") === (step.waitUntil !== undefined),
    { message: "offline and behind, and only they, say when to check again" },
  )
  .refine((step) => (step.verdict === "behind") === (step.waitingFor !== undefined), {
    message: "behind, and only behind, names the result it waits for",
  })
  .refine((step) => (step.send !== undefined) === (step.verdict === "moved" && step.state === "sending"), {
    message: "a move to sending, and only it, says what to send, all of it",
  });
export type StepResult = z.infer<typeof stepResultSchema>;

/** What a claimed playback's playback.start carries, and its kind (what the start is counted as). */
export interface PlaybackSend {
  kind: PlaybackKind;
  resultKey: string;
  resultId: string;
  voiceTargetId: string;
  text: string;
}

function sendOf(
  kind: PlaybackKind | undefined,
  [resultKey, resultId, voiceTargetId, text]: (string | undefined)[],
): PlaybackSend | undefined {
  if (
    kind === undefined ||
    resultKey === undefined ||
    resultId === undefined ||
    voiceTargetId === undefined ||
    text === undefined
  )
    return undefined;
  return { kind, resultKey, resultId, voiceTargetId, text };
}

const createdSchema = z.union([z.literal(0), z.literal(1)]);

const creationSchema = z
  .tuple([
    createdSchema,
    playbackStateSchema,
    z.string(),
    z.string(),
    z.union([playbackStateSchema, z.literal("")]),
  ])
  .transform(([created, state, playbackId, noticeId, noticeState]) => ({
    created: created === 1,
    state,
    playbackId: playbackId || undefined,
    notice: noticeId && noticeState ? { playbackId: noticeId, state: noticeState } : undefined,
  }));

const createOutbox = LuaScript.fromFile(
  new URL("../lua/outbox-create-1.lua", import.meta.url),
  creationSchema,
);
const createPlayback = LuaScript.fromFile(
  new URL("../lua/playback-create-1.lua", import.meta.url),
  z.tuple([createdSchema, playbackStateSchema]),
);
const playbackStep = LuaScript.fromFile(
  new URL("../lua/playback-step-1.lua", import.meta.url),
  stepResultSchema,
);

/**
 * The outbox and playback records under the device's OS base (`B:outbox:<resultKey>`, `B:playback:<playbackId>`);
 * every change is one Lua step on the device's hash slot.
 */
export class PlaybackStore {
  /**
   * `orderWaitMs`: how long an answer or notice waits for an earlier-routed result of the device that has no outbox
   * entry yet, and how often one waiting behind a queued or sent playback looks again.
   */
  constructor(
    private readonly redis: RedisClient,
    private readonly keys: Keyspace,
    private readonly orderWaitMs: number,
  ) {}

  async createOutboxEntry(entry: NewOutboxEntry, now: number): Promise<OutboxCreation> {
    return createOutbox.run(
      this.redis,
      [this.device(entry.deviceId).base],
      [
        entry.resultKey,
        now,
        entry.deviceId,
        entry.resultId,
        entry.state,
        entry.reason ?? "",
        entry.speechText,
        entry.voiceTargetId ?? "",
        entry.playbackId ?? "",
        entry.voiceTargetExpiresAt ?? "",
        entry.newestRunId ?? "",
        entry.notice?.playbackId ?? "",
        entry.notice?.text ?? "",
      ],
    );
  }

  async createRepeat(
    playback: NewRepeatPlayback,
    now: number,
  ): Promise<{ created: boolean; state: PlaybackState }> {
    const [created, state] = await createPlayback.run(
      this.redis,
      [this.device(playback.deviceId).base],
      [
        playback.playbackId,
        now,
        playback.deviceId,
        playback.resultKey,
        playback.resultId,
        "repeat" satisfies PlaybackKind,
        playback.state,
        playback.reason ?? "",
        playback.voiceTargetId,
        playback.text,
      ],
    );
    return { created: created === 1, state };
  }

  async step(
    deviceId: string,
    playbackId: string,
    operation: StepOperation,
    now: number,
  ): Promise<StepResult> {
    const args =
      operation.op === "claim"
        ? [operation.offlineRecheckMs, operation.deadGateway, operation.repeatWaitMs]
        : operation.op === "ack"
          ? [operation.ack, playbackAcksChannel(this.keys), deviceId]
          : [""];
    return playbackStep.run(
      this.redis,
      [this.device(deviceId).base],
      [operation.op, playbackId, now, this.orderWaitMs, ...args],
    );
  }

  /** Whether the result still has its place in the device's speech order (a playback waiting for it re-checks). */
  async inSpeechOrder(deviceId: string, resultKey: string): Promise<boolean> {
    return (await this.redis.zscore(this.device(deviceId).speechOrder, resultKey)) !== null;
  }

  /** The device's playbacks whose jobs wait for its Lamp to connect. */
  async awaitingLamp(deviceId: string): Promise<string[]> {
    return this.redis.zrange(this.device(deviceId).awaitingLamp, 0, -1);
  }

  async playbackState(deviceId: string, playbackId: string): Promise<PlaybackState | undefined> {
    const state = await this.redis.hget(this.device(deviceId).playback(playbackId), "state");
    return state === null ? undefined : playbackStateSchema.parse(state);
  }

  async outboxEntry(deviceId: string, resultKey: string): Promise<OutboxEntry | undefined> {
    const fields = await this.redis.hgetall(this.device(deviceId).outbox(resultKey));
    return Object.keys(fields).length === 0 ? undefined : outboxEntrySchema.parse(fields);
  }

  private device(deviceId: string): OsDeviceKeys {
    return new OsDeviceKeys(this.keys, deviceId);
  }
}
