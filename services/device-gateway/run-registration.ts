import { randomUUID } from "node:crypto";
import type { RedisClient } from "../../libs/redis/redis-client.js";
import { z } from "zod";
import { canonicalHash } from "../../libs/contract/canonical-json.js";
import type { VoiceRequest } from "../../libs/contract/lamp-wire.js";
import { deviceCommandSchema } from "../../libs/contract/device-commands.js";
import { markDeviceActive } from "../../libs/os-store/device-activity.js";
import { OsDeviceKeys } from "../../libs/os-store/os-keys.js";
import type { Keyspace } from "../../libs/redis/keyspace.js";
import { LuaScript } from "../../libs/redis/lua-script.js";
import type { RetentionIndex } from "../../libs/retention/retention-index.js";

/**
 * `{status, runId, idempotencyKey}`; runId is empty when nothing was registered (key taken, a limit reached); a
 * `rate_limited` reply carries the milliseconds until the next token instead of a key.
 */
export const registerRunScript = LuaScript.fromFile(
  new URL("./lua/register-run-1.lua", import.meta.url),
  z.union([
    z.tuple([
      z.enum(["created", "existing", "conflict", "key_taken", "too_many_pending"]),
      z.string(),
      z.string(),
    ]),
    z.tuple([z.literal("rate_limited"), z.literal(""), z.number().int().nonnegative()]),
  ]),
);
const cancellationSchema = z.enum(["not_found", "already_cancelled", "cancelled", "stop_queued"]);
const cancelRunScript = LuaScript.fromFile(
  new URL("./lua/cancel-run-1.lua", import.meta.url),
  cancellationSchema,
);

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
    const reply = await registerRunScript.run(
      this.redis,
      [device.base],
      [
        request.requestId,
        runId,
        this.newIdempotencyKey(),
        canonicalHash(request),
        deviceId,
        request.agentId,
        request.machineId,
        request.text,
        request.voiceTarget.id,
        expiresAt,
        request.replyRoute,
        now,
        JSON.stringify(command),
        this.limits.rateBurst,
        this.limits.ratePerSecond,
        this.limits.maxPendingRuns,
      ],
    );
    if (reply[0] === "rate_limited") return { status: reply[0], retryAfterMs: reply[2] };
    const [status, storedRunId, idempotencyKey] = reply;
    // After the step that stored the run: the run-resolver's retention sweep finds the device through this index.
    if (status === "created") await this.retention.list(deviceId, now);
    if (status === "created" || status === "existing") {
      // After the step that queued the send: the router holding the partition opens the session or reads it.
      await markDeviceActive(this.redis, this.keys, this.partitions, deviceId);
      return { status, runId: storedRunId, idempotencyKey };
    }
    if (status === "key_taken") return { status, idempotencyKey };
    if (status === "too_many_pending") return { status, maxPendingRuns: this.limits.maxPendingRuns };
    return { status };
  }

  async cancel(deviceId: string, runId: string, now = Date.now()): Promise<Cancellation> {
    const device = new OsDeviceKeys(this.keys, deviceId);
    const command = deviceCommandSchema.parse({ kind: "stop", runId, at: now });
    const cancellation = await cancelRunScript.run(
      this.redis,
      [device.base],
      [runId, randomUUID(), now, JSON.stringify(command)],
    );
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
