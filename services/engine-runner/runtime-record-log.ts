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

/**
 * The `engine.records` of one runtime: appends run strictly one after another, so stream order is seq order and
 * seq is gap-free. Each append also persists the runtime's position (`stateKey`: runtimeId, last seq, and any
 * extra state such as a read offset) in the same round trip, so a restarted runner knows what it appended. Only the
 * append must succeed; a position write that failed alone lags by one record until the next append.
 */
export class RuntimeRecordLog {
  private seq: number;
  private chain: Promise<void> = Promise.resolve();
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
    const written = this.chain.then(() => this.write(entry, state));
    this.chain = written;
    return written;
  }

  /** Resolves when everything appended so far is durable. */
  drained(): Promise<void> {
    return this.chain;
  }

  private async write(entry: EngineRecord, state: RuntimeState): Promise<void> {
    for (let attempt = 0; ; attempt += 1) {
      try {
        // Sent together but not as one pipeline: the stream and the agent's key live in different cluster slots.
        const [appended] = await Promise.allSettled([
          this.deps.redis.xadd(this.streamKey, "*", PAYLOAD_FIELD, JSON.stringify(entry)),
          state === "clear"
            ? this.deps.redis.del(this.stateKey)
            : this.deps.redis.hset(this.stateKey, { runtimeId: this.runtimeId, seq: entry.seq, ...state }),
        ]);
        if (appended.status === "rejected") throw appended.reason;
        this.deps.metrics.recordsAppended.inc({
          agent: this.agent.agentId,
          direction: DIRECTION[entry.record.type],
        });
        return;
      } catch (error) {
        this.deps.log.warn(
          { agentId: this.agent.agentId, seq: entry.seq, attempt, err: errorMessage(error) },
          "engine record append failed; retrying in order",
        );
        await new Promise((resolve) => setTimeout(resolve, Math.min(100 * 2 ** attempt, 2_000)));
      }
    }
  }
}
