import { STREAM_CATALOG } from "../../libs/contract/catalog.js";
import { randomUUID } from "node:crypto";
import type { RedisClient } from "../../libs/redis/redis-client.js";
import {
  engineRecordEntrySchema,
  type EngineRecord,
  type HarnessDispatch,
} from "../../libs/contract/pipeline-payloads.js";
import type { Keyspace } from "../../libs/redis/keyspace.js";
import { appendToStream } from "../../libs/streams/stream-writer.js";
import { waitFor } from "../helpers/test-redis.js";

/** All engine.records of one agent, in stream order, schema-checked. */
export async function recordsOf(
  redis: RedisClient,
  keys: Keyspace,
  agentId: string,
): Promise<EngineRecord[]> {
  const entries = await redis.xrange(keys.stream(STREAM_CATALOG.engineRecords.name), "-", "+");
  return entries
    .flatMap(([, fields]) => engineRecordEntrySchema.parse(JSON.parse(fields[1] as string)).records)
    .filter((record) => record.agentId === agentId);
}

export async function waitForRecords(
  redis: RedisClient,
  keys: Keyspace,
  agentId: string,
  accept: (records: EngineRecord[]) => boolean,
  // Generous: engine-sim processes boot through tsx, slow on a loaded CI machine.
  timeoutMs = 90_000,
): Promise<EngineRecord[]> {
  const records = await waitFor(() => recordsOf(redis, keys, agentId), accept, { timeoutMs, intervalMs: 50 });
  if (!accept(records))
    throw new Error(`records of ${agentId} never matched:\n${records.map(describeRecord).join("\n")}`);
  return records;
}

export function describeRecord(record: EngineRecord): string {
  const body = record.record;
  const raw = "raw" in body ? body.raw.slice(0, 160) : "";
  return `${record.runtimeId.slice(0, 8)}#${record.seq} ${body.type} ${raw}`;
}

/** Inbound frames of the records, parsed. */
export function inboundFrames(records: EngineRecord[]): Record<string, unknown>[] {
  return records.flatMap((record) =>
    record.record.type === "inbound" ? [JSON.parse(record.record.raw) as Record<string, unknown>] : [],
  );
}

export function hasInbound(
  records: EngineRecord[],
  test: (frame: Record<string, unknown>) => boolean,
): boolean {
  return inboundFrames(records).some(test);
}

export interface Dispatcher {
  input(agentId: string, text: string): Promise<HarnessDispatch & { kind: "input" }>;
  stop(agentId: string): Promise<HarnessDispatch & { kind: "stop" }>;
}

/** Appends dispatches as harness-gateway would (deliveryId a UUID, as Claude requires of `uuid`). */
export function dispatcher(
  redis: RedisClient,
  keys: Keyspace,
  machineId: string,
  deviceId = "lamp-1",
): Dispatcher {
  let counter = 0;
  const base = () => ({
    deliveryId: randomUUID(),
    deviceId,
    idempotencyKey: `key-${++counter}-${randomUUID().slice(0, 8)}`,
    machineId,
    reservedAt: Date.now(),
  });
  return {
    async input(agentId, text) {
      const dispatch = { kind: "input" as const, ...base(), agentId, text };
      await appendToStream(redis, keys, STREAM_CATALOG.harnessDispatch, dispatch);
      return dispatch;
    },
    async stop(agentId) {
      const dispatch = { kind: "stop" as const, ...base(), agentId };
      await appendToStream(redis, keys, STREAM_CATALOG.harnessDispatch, dispatch);
      return dispatch;
    },
  };
}

/** Runtime ids of the records, in the order they first appear. */
export function runtimesOf(records: EngineRecord[]): string[] {
  return [...new Set(records.map((record) => record.runtimeId))];
}

/** Checks seq is 1..n without gaps in every runtime. */
export function seqGapFree(records: EngineRecord[]): boolean {
  return runtimesOf(records).every((runtimeId) =>
    records
      .filter((record) => record.runtimeId === runtimeId)
      .every((record, index) => record.seq === index + 1),
  );
}
