import type { RedisClient } from "../../libs/redis/redis-client.js";
import type { EngineKind } from "../../libs/contract/engine.js";
import { STREAMS, engineRecordSchema, type EngineRecord } from "../../libs/contract/streams.js";
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

/** How many records one write sends at most: one XADD pipeline and one position write. */
const MAX_RECORDS_PER_WRITE = 64;

/**
 * The `engine.records` of one runtime: appends are written strictly in order, so stream order is seq order and
 * seq is gap-free. The records that arrive while a write is in flight go out together in the next one: their XADDs
 * as one pipeline and the runtime's position (`stateKey`: runtimeId, last seq, and any extra state such as a read
 * offset) as one write beside it, sent at the same moment, so a restarted runner knows what it appended. Only the
 * appends must succeed; a position write that failed alone lags until the next write.
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
    this.streamKey = streamKeyFor(STREAMS.engineRecords, deps.keys, agent);
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

  /** The oldest pending records, ending at the first that clears the position (nothing follows a clear). */
  private nextBatch(): PendingAppend[] {
    const cleared = this.pending.findIndex((appended) => appended.state === "clear");
    const size = Math.min(MAX_RECORDS_PER_WRITE, cleared === -1 ? this.pending.length : cleared + 1);
    return this.pending.splice(0, size);
  }

  private async write(batch: PendingAppend[]): Promise<void> {
    let unwritten = batch;
    for (let attempt = 0; ; attempt += 1) {
      // Sent together but not as one pipeline: the stream and the agent's key live in different cluster slots.
      const [appended] = await Promise.allSettled([this.appendRecords(unwritten), this.savePosition(batch)]);
      const written = appended.status === "fulfilled" ? appended.value : 0;
      this.countAppended(unwritten.slice(0, written));
      unwritten = unwritten.slice(written);
      if (unwritten.length === 0) return;
      this.deps.log.warn(
        {
          agentId: this.agent.agentId,
          seq: unwritten[0]?.entry.seq,
          attempt,
          err: appended.status === "rejected" ? errorMessage(appended.reason) : "XADD failed",
        },
        "engine record append failed; retrying in order",
      );
      await new Promise((resolve) => setTimeout(resolve, Math.min(100 * 2 ** attempt, 2_000)));
    }
  }

  /** One pipeline of XADDs; how many of them, from the first, were appended (the rest are resent). */
  private async appendRecords(batch: PendingAppend[]): Promise<number> {
    const pipeline = this.deps.redis.pipeline();
    for (const { entry } of batch) pipeline.xadd(this.streamKey, "*", PAYLOAD_FIELD, JSON.stringify(entry));
    const replies = (await pipeline.exec()) ?? [];
    const failed = replies.findIndex(([error]) => error !== null);
    return failed === -1 ? replies.length : failed;
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
