import { STREAM_CATALOG } from "../../libs/contract/catalog.js";
import type { RedisClient } from "../../libs/redis/redis-client.js";
import { z } from "zod";
import { type HarnessEvidence } from "../../libs/contract/pipeline-payloads.js";
import { NamedLuaScript } from "../../libs/redis/lua-script.js";
import { execPipeline } from "../../libs/redis/pipeline.js";
import type { Keyspace } from "../../libs/redis/keyspace.js";
import { AgentKeys } from "../../libs/redis/agent-keys.js";
import { PAYLOAD_FIELD } from "../../libs/streams/stream-writer.js";
import {
  bindingScopeKey,
  decodeBindingRow,
  encodeBindingRow,
  type IdentityBinding,
} from "./identity-binding.js";
import type { RuntimeState } from "./runtime-state.js";
import { parseStoredState } from "./stored-state.js";
import { streamKeyFor } from "../../libs/streams/stream-partitions.js";

/** `applied`, or `moved_on` when another consumer already moved the runtime on. */
const advanceReplySchema = z.object({ outcome: z.enum(["applied", "moved_on"]) });
const advanceRuntime = NamedLuaScript.fromFile<
  {
    runtimeId: string;
    expectedSeq: number;
    newSeq: number;
    stateJson: string;
    closed: boolean;
    closedRetentionMs: number;
  },
  typeof advanceReplySchema
>(new URL("./lua/advance-runtime-1.lua", import.meta.url), advanceReplySchema);

/** How many bindings already existed with other content. */
const bindReplySchema = z.object({ conflicts: z.number().int().nonnegative() });
const bindIdentities = NamedLuaScript.fromFile<
  {
    retentionMs: number;
    now: number;
    bindings: { scopeKey: string; json: string; appEntityId: string }[];
  },
  typeof bindReplySchema
>(new URL("./lua/bind-identities-1.lua", import.meta.url), bindReplySchema);

export interface LoadedRuntime {
  /** Last applied seq (0 = nothing applied yet). */
  seq: number;
  state: RuntimeState | undefined;
}

/**
 * Where the extractor keeps its durable state, all under the agent's hash tag (AgentKeys): each runtime's evidence
 * state, the set of open runtimes, and the mapping store shared by every runtime with its retention index. The binding
 * retention also bounds a closed runtime's state: it expires that long after the runtime closed.
 */
export class EvidenceStore {
  constructor(
    private readonly redis: RedisClient,
    private readonly keys: Keyspace,
    private readonly bindingRetentionMs: number,
    private readonly now: () => number = Date.now,
  ) {}

  async load(agentId: string, runtimeId: string): Promise<LoadedRuntime> {
    const [seq, json] = await this.redis.hmget(this.agentKeys(agentId).runtime(runtimeId), "seq", "state");
    return { seq: Number(seq ?? 0), state: json ? parseStoredState(json) : undefined };
  }

  async openRuntimes(agentId: string): Promise<string[]> {
    return (await this.redis.smembers(this.agentKeys(agentId).openRuntimes)).sort();
  }

  /**
   * Returns how many bindings already existed with different content (should be 0: ids are deterministic). Bindings
   * not seen for the retention are removed on the way, so a long-lived agent's mapping store stays bounded.
   */
  async persistBindings(agentId: string, bindings: IdentityBinding[]): Promise<number> {
    if (bindings.length === 0) return 0;
    const { conflicts } = await bindIdentities.run(this.redis, [this.agentKeys(agentId).base], {
      retentionMs: this.bindingRetentionMs,
      now: this.now(),
      bindings: bindings.map((binding) => ({
        scopeKey: bindingScopeKey(binding),
        json: encodeBindingRow(binding),
        appEntityId: binding.appEntityId,
      })),
    });
    return conflicts;
  }

  /** The binding of a native entity (key from `nativeScopeKey`), whichever runtime of the agent wrote it first. */
  async findBinding(agentId: string, scopeKey: string): Promise<IdentityBinding | undefined> {
    const json = await this.redis.hget(this.agentKeys(agentId).identity, scopeKey);
    return json === null ? undefined : decodeBindingRow(agentId, json);
  }

  /**
   * One pipeline for the evidence of a step (a record, or a runtime's records of a read batch); a record's evidence
   * is its agent's, so it all goes to the agent's partition. A step whose evidence landed only in part is redone
   * from its stored state and emits the same evidence again, which the result-producer applies once.
   */
  async emit(evidence: HarnessEvidence[]): Promise<void> {
    const [first] = evidence;
    if (first === undefined) return;
    const stream = streamKeyFor(STREAM_CATALOG.harnessEvidence, this.keys, first);
    const batch = this.redis.pipeline();
    for (const entry of evidence) {
      const checked = STREAM_CATALOG.harnessEvidence.schema.parse(entry);
      if (checked.agentId !== first.agentId)
        throw new Error(`one step's evidence names two agents: ${first.agentId}, ${checked.agentId}`);
      batch.xadd(stream, "*", PAYLOAD_FIELD, JSON.stringify(checked));
    }
    await execPipeline(batch);
  }

  /** Compare-and-set on the applied seq: false when another consumer already advanced this runtime. */
  async advance(state: RuntimeState, expectedSeq: number): Promise<boolean> {
    const { outcome } = await advanceRuntime.run(this.redis, [this.agentKeys(state.agentId).base], {
      runtimeId: state.runtimeId,
      expectedSeq,
      newSeq: state.appliedSeq,
      stateJson: JSON.stringify(state),
      closed: state.closed,
      closedRetentionMs: this.bindingRetentionMs,
    });
    return outcome === "applied";
  }

  private agentKeys(agentId: string): AgentKeys {
    return new AgentKeys(this.keys, agentId);
  }
}
