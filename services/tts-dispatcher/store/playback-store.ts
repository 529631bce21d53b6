import type { RedisClient } from "../../../libs/redis/redis-client.js";
import { z } from "zod";
import {
  outboxEntrySchema,
  type OutboxEntry,
  type PlaybackReason,
  type PlaybackState,
  playbackKindSchema,
  playbackReasonSchema,
  playbackStateSchema,
} from "../../../libs/contract/os-playback.js";
import type { playbackAckStateSchema } from "../../../libs/contract/lamp-wire.js";
import { OsDeviceKeys } from "../../../libs/os-store/os-keys.js";
import type { Keyspace } from "../../../libs/redis/keyspace.js";
import { NamedLuaScript } from "../../../libs/redis/lua-script.js";

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

export interface ClaimSettings {
  /** The gateway instance the presence key named while it had no heartbeat, when it did. */
  deadGateway?: string;
  /** With no Lamp, check again after at most this long (sooner when the voice target expires first). */
  offlineRecheckMs: number;
  /** How long after its request a repeat may wait for the Lamp before it ends `failed` / `lamp_offline`. */
  repeatWaitMs: number;
}

type PlaybackAckState = z.infer<typeof playbackAckStateSchema>;

const epochMs = z.number().int().nonnegative();
const transition = {
  kind: playbackKindSchema,
  state: playbackStateSchema,
  reason: playbackReasonSchema.optional(),
};

const creationSchema = z.object({
  created: z.boolean(),
  state: playbackStateSchema,
  playbackId: z.string().min(1).optional(),
  notice: z.object({ playbackId: z.string().min(1), state: playbackStateSchema }).optional(),
});
export type OutboxCreation = z.infer<typeof creationSchema>;

/** A move out of the line unsent or unconfirmed; `wake` is the new head of the device's line when this one was it. */
const endedSchema = z.object({
  verdict: z.literal("ended"),
  ...transition,
  wake: z.string().min(1).optional(),
});
const settledSchema = z.object({ verdict: z.literal("settled"), state: playbackStateSchema });
const unknownSchema = z.object({ verdict: z.literal("unknown") });
const awaitingAckSchema = z.object({ verdict: z.literal("awaiting-ack"), ackDeadline: epochMs });
/** Playbacks at the head of the line that a claim found overdue and ended, as their own jobs would have. */
const endedHeads = z.array(z.object(transition)).optional();

const claimSchema = z.discriminatedUnion("verdict", [
  z.object({
    verdict: z.literal("sending"),
    kind: playbackKindSchema,
    gatewayId: z.string().min(1),
    /** What the playback.start carries, so the worker need not read the playback. */
    send: z.object({
      resultKey: z.string().min(1),
      resultId: z.string().min(1),
      voiceTargetId: z.string().min(1),
      text: z.string(),
    }),
    endedHeads,
  }),
  endedSchema.extend({ endedHeads }),
  z.object({
    verdict: z.literal("behind"),
    head: z.object({ playbackId: z.string().min(1), kind: playbackKindSchema, state: playbackStateSchema }),
    waitUntil: epochMs,
    endedHeads,
  }),
  z.object({ verdict: z.literal("offline"), waitUntil: epochMs, endedHeads }),
  awaitingAckSchema,
  settledSchema,
  z.object({ verdict: z.literal("invalid") }),
  unknownSchema,
]);
export type Claim = z.infer<typeof claimSchema>;

const sentSchema = z.discriminatedUnion("verdict", [awaitingAckSchema, settledSchema, unknownSchema]);
export type Sent = z.infer<typeof sentSchema>;

const ackSchema = z.discriminatedUnion("verdict", [
  z.object({
    verdict: z.literal("moved"),
    ...transition,
    wake: z.string().min(1).optional(),
    /** When the playback.start was handed to the gateway, for an ack that moved it out of `sending`. */
    sentAt: epochMs.optional(),
  }),
  z.object({ verdict: z.literal("recorded") }),
  z.object({ verdict: z.literal("stale"), state: playbackStateSchema }),
  unknownSchema,
]);
export type AckStep = z.infer<typeof ackSchema>;

const abandonSchema = z.discriminatedUnion("verdict", [endedSchema, settledSchema, unknownSchema]);
export type Abandon = z.infer<typeof abandonSchema>;

const lua = (file: string) => new URL(`../lua/${file}`, import.meta.url);
const createOutbox = NamedLuaScript.fromFile<{ now: number } & NewOutboxEntry, typeof creationSchema>(
  lua("outbox-create-1.lua"),
  creationSchema,
);
const createRepeat = NamedLuaScript.fromFile<
  { now: number; retentionMs: number } & NewRepeatPlayback,
  z.ZodType<{ created: boolean; state: PlaybackState }>
>(lua("playback-create-1.lua"), z.object({ created: z.boolean(), state: playbackStateSchema }));
const claimPlayback = NamedLuaScript.fromFile<
  { playbackId: string; now: number } & ClaimSettings,
  typeof claimSchema
>(lua("playback-claim-1.lua"), claimSchema);
const markSent = NamedLuaScript.fromFile<
  { playbackId: string; now: number; ackTimeoutMs: number },
  typeof sentSchema
>(lua("playback-sent-1.lua"), sentSchema);
const applyAck = NamedLuaScript.fromFile<
  { playbackId: string; now: number; ack: PlaybackAckState },
  typeof ackSchema
>(lua("playback-ack-1.lua"), ackSchema);
const abandonPlayback = NamedLuaScript.fromFile<{ playbackId: string; now: number }, typeof abandonSchema>(
  lua("playback-abandon-1.lua"),
  abandonSchema,
);

/**
 * The outbox and playback records under the device's OS base (`B:outbox:<resultKey>`, `B:playback:<playbackId>`)
 * and the device's playback line (`B:playbacks:line`); every change is one Lua step on the device's hash slot.
 */
export class PlaybackStore {
  /** `repeatRetentionMs`: how long a repeat's record is kept after its request (it has no outbox entry to go with). */
  constructor(
    private readonly redis: RedisClient,
    private readonly keys: Keyspace,
    private readonly repeatRetentionMs: number,
  ) {}

  createOutboxEntry(entry: NewOutboxEntry, now: number): Promise<OutboxCreation> {
    return createOutbox.run(this.redis, [this.base(entry.deviceId)], { ...entry, now });
  }

  createRepeat(
    playback: NewRepeatPlayback,
    now: number,
  ): Promise<{ created: boolean; state: PlaybackState }> {
    return createRepeat.run(this.redis, [this.base(playback.deviceId)], {
      ...playback,
      now,
      retentionMs: this.repeatRetentionMs,
    });
  }

  /** The job's turn: what to do with the playback now (send it, wait, or nothing). */
  claim(deviceId: string, playbackId: string, settings: ClaimSettings, now: number): Promise<Claim> {
    return claimPlayback.run(this.redis, [this.base(deviceId)], { playbackId, now, ...settings });
  }

  /** The playback.start was handed to the gateway: from now on the playback waits for its ack until the deadline. */
  sent(deviceId: string, playbackId: string, ackTimeoutMs: number, now: number): Promise<Sent> {
    return markSent.run(this.redis, [this.base(deviceId)], { playbackId, now, ackTimeoutMs });
  }

  ack(deviceId: string, playbackId: string, ack: PlaybackAckState, now: number): Promise<AckStep> {
    return applyAck.run(this.redis, [this.base(deviceId)], { playbackId, now, ack });
  }

  abandon(deviceId: string, playbackId: string, now: number): Promise<Abandon> {
    return abandonPlayback.run(this.redis, [this.base(deviceId)], { playbackId, now });
  }

  /** A repeat that will never be created (its result is unknown to the device) gives back its reservation. */
  async releaseRepeat(deviceId: string, playbackId: string): Promise<void> {
    await this.redis.zrem(this.device(deviceId).repeatsAccepted, playbackId);
  }

  /** The playback at the head of the device's line, the one that may be sent. */
  async lineHead(deviceId: string): Promise<string | undefined> {
    return (await this.redis.lindex(this.device(deviceId).playbackLine, 0)) ?? undefined;
  }

  /** The device's playbacks whose jobs wait for its Lamp to connect. */
  awaitingLamp(deviceId: string): Promise<string[]> {
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

  private base(deviceId: string): string {
    return this.device(deviceId).base;
  }

  private device(deviceId: string): OsDeviceKeys {
    return new OsDeviceKeys(this.keys, deviceId);
  }
}
