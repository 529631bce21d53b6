import { randomUUID } from "node:crypto";
import type { Redis } from "ioredis";
import { z } from "zod";
import { canonicalHash } from "../../libs/contract/canonical-json.js";
import type { VoiceRequest } from "../../libs/contract/lamp-wire.js";
import { deviceCommandSchema } from "../../libs/contract/device-commands.js";
import { knownDevicesKey, OsDeviceKeys } from "../../libs/os-store/os-keys.js";
import type { Keyspace } from "../../libs/redis/keyspace.js";
import { LuaScript } from "../../libs/redis/lua-script.js";

/** `{status, runId, idempotencyKey}`; runId is empty when the minted key was already taken (nothing registered). */
export const registerRunScript = LuaScript.fromFile(
  new URL("./lua/register-run-1.lua", import.meta.url),
  z.tuple([z.enum(["created", "existing", "conflict", "key_taken"]), z.string(), z.string()]),
);
const cancellationSchema = z.enum(["not_found", "already_cancelled", "cancelled", "stop_queued"]);
const cancelRunScript = LuaScript.fromFile(
  new URL("./lua/cancel-run-1.lua", import.meta.url),
  cancellationSchema,
);

export type Registration =
  | { status: "created" | "existing"; runId: string; idempotencyKey: string }
  | { status: "conflict" }
  | { status: "key_taken"; idempotencyKey: string };

export type Cancellation = z.infer<typeof cancellationSchema>;

/**
 * The run registry's write side: a voice request becomes a durable run (local runId, fresh idempotency key, voice
 * target, reply route, state pending) together with the router's send command, in one Lua step, before anything
 * is sent; a cancel marks the run and queues one turn.stop.
 */
export class RunRegistration {
  constructor(
    private readonly redis: Redis,
    private readonly keys: Keyspace,
    private readonly gatewayInstanceId: string,
    private readonly voiceTargetTtlMs: number,
  ) {}

  async register(deviceId: string, request: VoiceRequest, now = Date.now()): Promise<Registration> {
    const device = new OsDeviceKeys(this.keys, deviceId);
    await this.redis.sadd(knownDevicesKey(this.keys), deviceId);
    const runId = randomUUID();
    const expiresAt = request.voiceTarget.expiresAt
      ? Date.parse(request.voiceTarget.expiresAt)
      : now + this.voiceTargetTtlMs;
    const command = deviceCommandSchema.parse({
      kind: "send",
      runId,
      replyTo: this.gatewayInstanceId,
      at: now,
    });
    const [status, storedRunId, idempotencyKey] = await registerRunScript.run(
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
      ],
    );
    if (status === "created" || status === "existing") return { status, runId: storedRunId, idempotencyKey };
    if (status === "key_taken") return { status, idempotencyKey };
    return { status };
  }

  async cancel(deviceId: string, runId: string, now = Date.now()): Promise<Cancellation> {
    const device = new OsDeviceKeys(this.keys, deviceId);
    const command = deviceCommandSchema.parse({ kind: "stop", runId, at: now });
    return cancelRunScript.run(
      this.redis,
      [device.base],
      [runId, randomUUID(), now, JSON.stringify(command)],
    );
  }

  /** The key the Harness will know this run by: fresh per run, never derived from the request. */
  newIdempotencyKey(): string {
    return randomUUID();
  }
}
