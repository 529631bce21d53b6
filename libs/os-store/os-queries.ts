import type { RedisClient } from "../redis/redis-client.js";
import type { Keyspace } from "../redis/keyspace.js";
import { expiredHeldResultSchema, expiredHeldResultView } from "./expired-held-result.js";
import { heldResultSchema, heldResultView } from "./held-result.js";
import { OsDeviceKeys } from "./os-keys.js";
import { protocolErrorRecordSchema, rejectionRecordSchema } from "../contract/os-audit-records.js";
import { parseResultRecord } from "./result-record.js";
import { parseRunRecord, type RunRecord, type RunState } from "./run-record.js";

const MAX_LISTED = 200;

/**
 * Read side of the OS store for the query API: runs, results with their outbox state, results held for receipts,
 * rejections, protocol errors.
 */
export class OsQueries {
  constructor(
    private readonly redis: RedisClient,
    private readonly keys: Keyspace,
  ) {}

  async run(deviceId: string, runId: string): Promise<RunRecord | undefined> {
    const device = new OsDeviceKeys(this.keys, deviceId);
    return parseRunRecord(await this.redis.hgetall(device.run(runId)));
  }

  /** Newest first; `pending` reads the pending index, other states filter the full index. */
  async runs(deviceId: string, state: RunState | undefined): Promise<RunRecord[]> {
    const device = new OsDeviceKeys(this.keys, deviceId);
    const index = state === "pending" ? device.pendingRuns : device.runs;
    const runIds = await this.redis.zrevrange(index, 0, state === undefined ? MAX_LISTED - 1 : -1);
    const runs: RunRecord[] = [];
    for (const runId of runIds) {
      const run = parseRunRecord(await this.redis.hgetall(device.run(runId)));
      if (run && (state === undefined || run.state === state)) runs.push(run);
      if (runs.length >= MAX_LISTED) break;
    }
    return runs;
  }

  async result(deviceId: string, resultId: string) {
    const device = new OsDeviceKeys(this.keys, deviceId);
    const resultKey = await this.redis.get(device.resultId(resultId));
    if (resultKey === null) return undefined;
    const result = parseResultRecord(await this.redis.hgetall(device.result(resultKey)));
    if (!result) return undefined;
    const outbox = await this.redis.hgetall(device.outbox(resultKey));
    const { speechText, ...playback } = outbox;
    return {
      resultId: result.resultId,
      deviceId: result.deviceId,
      serverInstanceId: result.serverInstanceId,
      agentId: result.agentId,
      outcome: result.outcome,
      fullText: result.fullText,
      speechText: speechText ?? null,
      engineTurnId: result.engineTurnId ?? null,
      members: result.members,
      storedAt: new Date(result.storedAt).toISOString(),
      playback: Object.keys(playback).length === 0 ? null : { ...playback, reason: playback.reason ?? null },
    };
  }

  /** Oldest first: the result held longest is the one an operator looks at. */
  async heldResults(deviceId: string) {
    const held = await this.redis.hgetall(new OsDeviceKeys(this.keys, deviceId).waiting);
    return Object.entries(held)
      .map(([id, json]) => heldResultView(id, heldResultSchema.parse(JSON.parse(json))))
      .sort((a, b) => a.heldAt.localeCompare(b.heldAt))
      .slice(0, MAX_LISTED);
  }

  /** Newest first: held results the router gave up on because their receipts never bound, with their frames. */
  async expiredHeldResults(deviceId: string) {
    const entries = await this.newestEntries(new OsDeviceKeys(this.keys, deviceId).heldExpired);
    return entries.map(({ json }) => expiredHeldResultView(expiredHeldResultSchema.parse(json)));
  }

  async rejections(deviceId: string) {
    const entries = await this.newestEntries(new OsDeviceKeys(this.keys, deviceId).rejections);
    return entries.map(({ id, json }) => ({ id, ...rejectionRecordSchema.parse(json) }));
  }

  async protocolErrors(deviceId: string) {
    const entries = await this.newestEntries(new OsDeviceKeys(this.keys, deviceId).protocolErrors);
    return entries.map(({ id, json }) => ({ id, ...protocolErrorRecordSchema.parse(json) }));
  }

  private async newestEntries(streamKey: string): Promise<{ id: string; json: unknown }[]> {
    const entries = await this.redis.xrevrange(streamKey, "+", "-", "COUNT", MAX_LISTED);
    return entries.map(([id, fields]) => ({ id, json: JSON.parse(fields[1] ?? "null") }));
  }
}
