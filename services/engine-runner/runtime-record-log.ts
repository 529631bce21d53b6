import { STREAM_CATALOG } from "../../libs/contract/catalog.js";
import type { RedisClient } from "../../libs/redis/redis-client.js";
import type { EngineKind } from "../../libs/contract/engine.js";
import {
  ENGINE_RECORDS_PER_ENTRY,
  engineRecordEntry,
  engineRecordSchema,
  type EngineRecord,
} from "../../libs/contract/pipeline-payloads.js";
import type { Logger } from "../../libs/logging/logger.js";
import type { Keyspace } from "../../libs/redis/keyspace.js";
import { PAYLOAD_FIELD } from "../../libs/streams/stream-writer.js";
import { errorMessage } from "../../libs/errors/error-message.js";
import type { RunnerMetrics } from "./runner-metrics.js";
import { streamKeyFor } from "../../libs/streams/stream-partitions.js";

export type RecordBody = EngineRecord["record"];

export interface AgentIdentity {
  agentId: string;
  machineId: string;
  engine: EngineKind;
}

export interface RecordLogDeps {
  redis: RedisClient;
  keys: Keyspace;
  metrics: RunnerMetrics;
  log: Logger;
}

/** Extra fields persisted with the runtime's position (a transcript's read offset), or "clear" when it ended. */
export type RuntimeState = Record<string, string | number> | "clear";

const DIRECTION: Record<RecordBody["type"], string> = {
  inbound: "inbound",
  outbound: "outbound",
  handed_over: "handed_over",
  undeliverable: "undeliverable",
  withdrawn: "withdrawn",
  runtime_started: "lifecycle",
  runtime_exited: "lifecycle",
};

interface PendingAppend {
  entry: EngineRecord;
  state: RuntimeState;
  durable: () => void;
}

/** Raw bytes one entry carries at most (a long answer is one record alone, whatever its size). */
const MAX_ENTRY_BYTES = 256 * 1024;

/**
 * The `engine.records` of one runtime: appends are written strictly in order, so stream order is seq order and
 * seq is gap-free. The records that arrive while a write is in flight go out together in the next one: one stream
 * entry (up to ENGINE_RECORDS_PER_ENTRY records, MAX_ENTRY_BYTES) and the runtime's position (`stateKey`:
 * runtimeId, last seq, and any extra state such as a read offset) as one write beside it, sent at the same moment,
 * so a restarted runner knows what it appended. Only the append must succeed; a position write that failed alone
 * lags until the next write.
 */
export class RuntimeRecordLog {
  private seq: number;
  private readonly pending: PendingAppend[] = [];
  private writing: Promise<void> = Promise.resolve();
  private writerRunning = false;
  private readonly streamKey: string;

  constructor(
    private readonly deps: RecordLogDeps,
    readonly agent: AgentIdentity,
    readonly runtimeId: string,
    private readonly stateKey: string,
    startSeq = 0,
  ) {
    this.seq = startSeq;
    this.streamKey = streamKeyFor(STREAM_CATALOG.engineRecords, deps.keys, agent);
  }

  get lastSeq(): number {
    return this.seq;
  }

  /** Resolves once the record is durable in Redis. A Redis outage delays it (retried in order), never drops it. */
  append(record: RecordBody, state: RuntimeState = {}): Promise<void> {
    const entry = engineRecordSchema.parse({
      ...this.agent,
      runtimeId: this.runtimeId,
      seq: ++this.seq,
      receivedAt: Date.now(),
      record,
    });
    const durable = new Promise<void>((resolve) => this.pending.push({ entry, state, durable: resolve }));
    if (!this.writerRunning) {
      this.writerRunning = true;
      this.writing = this.writeAll();
    }
    return durable;
  }

  /** Resolves when everything appended so far is durable. */
  drained(): Promise<void> {
    return this.writing;
  }

  private async writeAll(): Promise<void> {
    while (this.pending.length > 0) {
      const batch = this.nextBatch();
      await this.write(batch);
      for (const appended of batch) appended.durable();
    }
    this.writerRunning = false;
  }

  /**
   * The oldest pending records that fit one entry, ending at the first that clears the position (nothing follows a
   * clear).
   */
  private nextBatch(): PendingAppend[] {
    let size = 0;
    let bytes = 0;
    for (const appended of this.pending) {
      const record = appended.entry.record;
      bytes += "raw" in record ? record.raw.length : 0;
      if (size > 0 && (size === ENGINE_RECORDS_PER_ENTRY || bytes > MAX_ENTRY_BYTES)) break;
      size += 1;
      if (appended.state === "clear") break;
    }
    return this.pending.splice(0, size);
  }

  private async write(batch: PendingAppend[]): Promise<void> {
    const payload = JSON.stringify(engineRecordEntry(batch.map(({ entry }) => entry)));
    for (let attempt = 0; ; attempt += 1) {
      // Sent together but not as one pipeline: the stream and the agent's key live in different cluster slots.
      const [appended] = await Promise.allSettled([
        this.deps.redis.xadd(this.streamKey, "*", PAYLOAD_FIELD, payload),
        this.savePosition(batch),
      ]);
      if (appended.status === "fulfilled") {
        this.countAppended(batch);
        return;
      }
      this.deps.log.warn(
        {
          agentId: this.agent.agentId,
          seq: batch[0]?.entry.seq,
          attempt,
          err: errorMessage(appended.reason),
        },
        "engine record append failed; retrying in order",
      );
      await new Promise((resolve) => setTimeout(resolve, Math.min(100 * 2 ** attempt, 2_000)));
    }
  }

  private savePosition(batch: PendingAppend[]): Promise<unknown> {
    const last = batch[batch.length - 1] as PendingAppend;
    if (last.state === "clear") return this.deps.redis.del(this.stateKey);
    const state: Record<string, string | number> = {};
    for (const { state: extra } of batch) if (extra !== "clear") Object.assign(state, extra);
    return this.deps.redis.hset(this.stateKey, { runtimeId: this.runtimeId, seq: last.entry.seq, ...state });
  }

  private countAppended(written: PendingAppend[]): void {
    for (const { entry } of written)
      this.deps.metrics.recordsAppended.inc({
        agent: this.agent.agentId,
        direction: DIRECTION[entry.record.type],
      });
  }
}
