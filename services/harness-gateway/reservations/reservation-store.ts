import { STREAM_CATALOG } from "../../../libs/contract/catalog.js";
import { randomUUID } from "node:crypto";
import type { RedisClient } from "../../../libs/redis/redis-client.js";
import { z } from "zod";
import { canonicalHash } from "../../../libs/contract/canonical-json.js";
import type { TurnSendRequest, TurnStopRequest } from "../../../libs/contract/harness-wire.js";
import { receiptSchema, type Receipt } from "../../../libs/contract/receipt.js";
import { harnessDispatchSchema, type HarnessDispatch } from "../../../libs/contract/pipeline-payloads.js";
import type { Keyspace } from "../../../libs/redis/keyspace.js";
import { NamedLuaScript } from "../../../libs/redis/lua-script.js";
import { execPipeline } from "../../../libs/redis/pipeline.js";
import { appendToStream } from "../../../libs/streams/stream-writer.js";
import { HarnessDeviceKeys, undispatchedDevicesKey } from "../../../libs/harness-store/harness-keys.js";

/** A duplicate answers the receipt stored by the first request. */
const reserveReplySchema = z.discriminatedUnion("status", [
  z.object({ status: z.literal("duplicate"), receiptJson: z.string().min(1) }),
  z.object({ status: z.enum(["accepted", "conflict", "backpressure", "revoked"]) }),
]);
const reserveScript = NamedLuaScript.fromFile<
  {
    idempotencyKey: string;
    requestHash: string;
    receiptJson: string;
    dispatchJson: string;
    now: number;
    capacity: number;
    retentionMs: number;
    tokenIssuedAt: number;
  },
  typeof reserveReplySchema
>(new URL("../lua/reserve-1.lua", import.meta.url), reserveReplySchema);

export type ReservableRequest = TurnSendRequest | TurnStopRequest;

export type ReservationOutcome =
  | { status: "accepted"; receipt: Receipt; dispatch: HarnessDispatch }
  | { status: "duplicate"; receipt: Receipt }
  | { status: "conflict" | "backpressure" | "revoked" };

export interface ReservationLimits {
  capacity: number;
  retentionMs: number;
}

/**
 * The dedupe identity of a request: canonical SHA-256 of every validated field except the correlation id
 * (requestId), which a resend after a lost ack legitimately changes.
 */
export function requestHash(request: ReservableRequest): string {
  return canonicalHash({ ...request, requestId: null });
}

/** Reservations and receipts of devices: reserve durably, then dispatch exactly once per reservation. */
export class ReservationStore {
  constructor(
    private readonly redis: RedisClient,
    private readonly keys: Keyspace,
    private readonly limits: ReservationLimits,
  ) {}

  async reserve(
    deviceId: string,
    request: ReservableRequest,
    serverInstanceId: string,
    tokenIssuedAt: number,
  ): Promise<ReservationOutcome> {
    const now = Date.now();
    const deliveryId = randomUUID();
    const receipt: Receipt = {
      idempotencyKey: request.idempotencyKey,
      deliveryId,
      operation: request.type,
      state: "queued",
      machineId: request.machineId,
      agentId: request.agentId,
      serverInstanceId,
      turnId: null,
      error: null,
      at: now,
    };
    const dispatch = dispatchOf(deviceId, deliveryId, request, now);
    const device = new HarnessDeviceKeys(this.keys, deviceId);
    const reserved = reserveScript.run(this.redis, [device.base], {
      idempotencyKey: request.idempotencyKey,
      requestHash: requestHash(request),
      receiptJson: JSON.stringify(receipt),
      dispatchJson: JSON.stringify(dispatch),
      now,
      capacity: this.limits.capacity,
      retentionMs: this.limits.retentionMs,
      tokenIssuedAt,
    });
    // Issued in the same tick, so on the same connection Redis runs it right after the reserve step, even if this
    // process dies before the reply: the dispatch sweep's index then lists every device it might have work on
    // (a duplicate or refused request lists it needlessly; the sweep takes it out again). See dispatch-sweep.ts.
    const [reply] = await Promise.all([
      reserved,
      this.redis.zadd(undispatchedDevicesKey(this.keys), "NX", now, deviceId),
    ]);
    if (reply.status === "accepted") return { status: reply.status, receipt, dispatch };
    if (reply.status === "duplicate")
      return { status: reply.status, receipt: receiptSchema.parse(JSON.parse(reply.receiptJson)) };
    return { status: reply.status };
  }

  /**
   * Appends a just-reserved dispatch record, then marks it dispatched (a crash in between is swept later). The
   * reservation's copy of the record goes before its index entry: a crash between leaves an entry the sweep finds
   * without a copy and drops, never a copy no index names.
   */
  async dispatch(deviceId: string, dispatch: HarnessDispatch): Promise<void> {
    const device = new HarnessDeviceKeys(this.keys, deviceId);
    await appendToStream(this.redis, this.keys, STREAM_CATALOG.harnessDispatch, dispatch);
    await execPipeline(
      this.redis
        .pipeline()
        .hdel(device.reservation(dispatch.idempotencyKey), "dispatch")
        .zrem(device.undispatched, dispatch.idempotencyKey),
    );
  }

  /** The dispatch sweep: dispatches a reservation still marked undispatched; false when it no longer needs it. */
  async dispatchLeftover(deviceId: string, idempotencyKey: string): Promise<boolean> {
    const device = new HarnessDeviceKeys(this.keys, deviceId);
    const raw = await this.redis.hget(device.reservation(idempotencyKey), "dispatch");
    if (!raw) {
      await this.redis.zrem(device.undispatched, idempotencyKey);
      return false;
    }
    await this.dispatch(deviceId, harnessDispatchSchema.parse(JSON.parse(raw)));
    return true;
  }

  async receipt(deviceId: string, idempotencyKey: string): Promise<Receipt | null> {
    const device = new HarnessDeviceKeys(this.keys, deviceId);
    const raw = await this.redis.hget(device.reservation(idempotencyKey), "receipt");
    return raw ? receiptSchema.parse(JSON.parse(raw)) : null;
  }
}

function dispatchOf(
  deviceId: string,
  deliveryId: string,
  request: ReservableRequest,
  now: number,
): HarnessDispatch {
  const target = {
    deliveryId,
    deviceId,
    idempotencyKey: request.idempotencyKey,
    agentId: request.agentId,
    machineId: request.machineId,
    reservedAt: now,
  };
  return request.type === "turn.send"
    ? { kind: "input", ...target, text: request.text }
    : {
        kind: "stop",
        ...target,
        ...(request.targetIdempotencyKey === undefined
          ? {}
          : { targetIdempotencyKey: request.targetIdempotencyKey }),
      };
}
