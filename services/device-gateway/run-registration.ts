import { randomUUID } from "node:crypto";
import type { RedisClient } from "../../libs/redis/redis-client.js";
import { z } from "zod";
import { canonicalHash } from "../../libs/contract/canonical-json.js";
import type { VoiceRequest } from "../../libs/contract/lamp-wire.js";
import { deviceCommandSchema } from "../../libs/contract/device-commands.js";
import { markDeviceActive } from "../../libs/os-store/device-activity.js";
import { OsDeviceKeys } from "../../libs/os-store/os-keys.js";
import type { Keyspace } from "../../libs/redis/keyspace.js";
import { NamedLuaScript } from "../../libs/redis/lua-script.js";
import type { RetentionIndex } from "../../libs/retention/retention-index.js";

/** What a new run is stored with, besides its state and creation time. */
export interface RunRegistrationFields {
  runId: string;
  requestId: string;
  idempotencyKey: string;
  requestHash: string;
  deviceId: string;
  agentId: string;
  machineId: string;
  text: string;
  voiceTargetId: string;
  voiceTargetExpiresAt: number;
  replyRoute: string;
}

const registrationReplySchema = z.discriminatedUnion("status", [
  z.object({
    status: z.enum(["created", "existing"]),
    runId: z.string().min(1),
    idempotencyKey: z.string().min(1),
  }),
  z.object({ status: z.literal("conflict") }),
  z.object({ status: z.literal("key_taken"), idempotencyKey: z.string().min(1) }),
  z.object({ status: z.literal("too_many_pending") }),
  z.object({ status: z.literal("rate_limited"), retryAfterMs: z.number().int().nonnegative() }),
]);

/** The run and its send command in one step, unless the device's limits refuse it (then nothing is written). */
export const registerRunScript = NamedLuaScript.fromFile<
  {
    run: RunRegistrationFields;
    now: number;
    sendCommandJson: string;
    limits: RunLimits;
  },
  typeof registrationReplySchema
>(new URL("./lua/register-run-1.lua", import.meta.url), registrationReplySchema);

const cancellationSchema = z.enum(["not_found", "already_cancelled", "cancelled", "stop_queued"]);
const cancellationReplySchema = z.object({ outcome: cancellationSchema });
const cancelRunScript = NamedLuaScript.fromFile<
  { runId: string; stopKey: string; now: number; stopCommandJson: string },
  typeof cancellationReplySchema
>(new URL("./lua/cancel-run-1.lua", import.meta.url), cancellationReplySchema);

/** What one device may have at once: its voice.request token bucket and its unresolved runs. */
export interface RunLimits {
  rateBurst: number;
  ratePerSecond: number;
  maxPendingRuns: number;
}

export type Registration =
  | { status: "created" | "existing"; runId: string; idempotencyKey: string }
  | { status: "conflict" }
  | { status: "key_taken"; idempotencyKey: string }
  | { status: "too_many_pending"; maxPendingRuns: number }
  | { status: "rate_limited"; retryAfterMs: number };

export type Cancellation = z.infer<typeof cancellationSchema>;

/**
 * The run registry's write side: a voice request becomes a durable run (local runId, fresh idempotency key, voice
 * target, reply route, state pending) together with the router's send command, in one Lua step, before anything
 * is sent, unless the device's limits refuse it (then nothing is written); a cancel marks the run and queues one
 * turn.stop.
 */
export class RunRegistration {
  constructor(
    private readonly redis: RedisClient,
    private readonly keys: Keyspace,
    private readonly gatewayInstanceId: string,
    private readonly voiceTargetTtlMs: number,
    private readonly limits: RunLimits,
    private readonly partitions: number,
    private readonly retention: RetentionIndex,
  ) {}

  /**
   * `runId` is the id a new run gets: a caller that waits for the run's receipt picks it (`newRunId`) and starts
   * waiting before the send is queued. A repeated requestId answers with the run it made before instead.
   */
  async register(
    deviceId: string,
    request: VoiceRequest,
    runId = this.newRunId(),
    now = Date.now(),
  ): Promise<Registration> {
    const device = new OsDeviceKeys(this.keys, deviceId);
    const expiresAt = request.voiceTarget.expiresAt
      ? Date.parse(request.voiceTarget.expiresAt)
      : now + this.voiceTargetTtlMs;
    const command = deviceCommandSchema.parse({
      kind: "send",
      runId,
      replyTo: this.gatewayInstanceId,
      at: now,
    });
    const reply = await registerRunScript.run(this.redis, [device.base], {
      run: {
        runId,
        requestId: request.requestId,
        idempotencyKey: this.newIdempotencyKey(),
        requestHash: canonicalHash(request),
        deviceId,
        agentId: request.agentId,
        machineId: request.machineId,
        text: request.text,
        voiceTargetId: request.voiceTarget.id,
        voiceTargetExpiresAt: expiresAt,
        replyRoute: request.replyRoute,
      },
      now,
      sendCommandJson: JSON.stringify(command),
      limits: this.limits,
    });
    if (reply.status === "too_many_pending")
      return { status: reply.status, maxPendingRuns: this.limits.maxPendingRuns };
    if (reply.status !== "created" && reply.status !== "existing") return reply;
    // After the step that stored the run: the run-resolver's retention sweep finds the device through this index.
    if (reply.status === "created") await this.retention.list(deviceId, now);
    // After the step that queued the send: the router holding the partition opens the session or reads it.
    await markDeviceActive(this.redis, this.keys, this.partitions, deviceId);
    return reply;
  }

  async cancel(deviceId: string, runId: string, now = Date.now()): Promise<Cancellation> {
    const device = new OsDeviceKeys(this.keys, deviceId);
    const command = deviceCommandSchema.parse({ kind: "stop", runId, at: now });
    const { outcome: cancellation } = await cancelRunScript.run(this.redis, [device.base], {
      runId,
      stopKey: randomUUID(),
      now,
      stopCommandJson: JSON.stringify(command),
    });
    if (cancellation === "stop_queued")
      await markDeviceActive(this.redis, this.keys, this.partitions, deviceId);
    return cancellation;
  }

  /** A fresh local run id. */
  newRunId(): string {
    return randomUUID();
  }

  /** The key the Harness will know this run by: fresh per run, never derived from the request. */
  newIdempotencyKey(): string {
    return randomUUID();
  }
}
