import { STREAM_CATALOG } from "../../libs/contract/catalog.js";
import type { EngineRecord, HarnessEvidence } from "../../libs/contract/pipeline-payloads.js";
import { harnessEvidenceSchema } from "../../libs/contract/pipeline-payloads.js";
import { AgentKeys } from "../../libs/redis/agent-keys.js";
import {
  bindingScopeKey,
  encodeBindingRow,
  type IdentityBinding,
} from "../../services/evidence-extractor/identity-binding.js";
import { EvidenceStore } from "../../services/evidence-extractor/evidence-store.js";
import { extractorMetrics } from "../../services/evidence-extractor/extractor-metrics.js";
import { RecordProcessor } from "../../services/evidence-extractor/record-processor.js";
import type { EvidenceLimits } from "../../services/evidence-extractor/runtime-state.js";
import { Registry } from "prom-client";
import type { TestRedis } from "../helpers/test-redis.js";

export const TEST_LIMITS: EvidenceLimits = {
  maxOpenInputs: 256,
  maxChainRows: 5_000,
  maxOpenTurns: 256,
  clockSkewMs: 2_000,
};

/** The service's Redis-backed processor, driven directly (no stream consumer) for replay tests. */
export function redisProcessor(
  t: TestRedis,
  limits = TEST_LIMITS,
): { processor: RecordProcessor; store: EvidenceStore } {
  const store = new EvidenceStore(t.redis, t.keys, 60_000);
  const processor = new RecordProcessor({
    store,
    limits,
    orderWaitMs: 0,
    metrics: extractorMetrics(new Registry()),
  });
  return { processor, store };
}

export async function processAll(processor: RecordProcessor, records: EngineRecord[]): Promise<void> {
  for (const record of records) await processor.process(record);
}

/** Raw payloads of harness.evidence in stream order (byte comparisons use these). */
export async function evidencePayloads(t: TestRedis): Promise<string[]> {
  const entries = await t.redis.xrange(t.keys.stream(STREAM_CATALOG.harnessEvidence.name), "-", "+");
  return entries.map(([, fields]) => fields[1] as string);
}

export async function emittedEvidence(t: TestRedis): Promise<HarnessEvidence[]> {
  return (await evidencePayloads(t)).map((raw) => harnessEvidenceSchema.parse(JSON.parse(raw)));
}

/** The agents' mapping stores as stored: `agentId|scopeKey` -> row JSON. */
export async function storedMappingRows(
  t: TestRedis,
  agentIds: Iterable<string>,
): Promise<Map<string, string>> {
  const stored = new Map<string, string>();
  for (const agentId of new Set(agentIds))
    for (const [field, json] of Object.entries(
      await t.redis.hgetall(new AgentKeys(t.keys, agentId).identity),
    ))
      stored.set(`${agentId}|${field}`, json);
  return stored;
}

/** What the mapping stores must hold for these bindings: the first row per native scope of each agent. */
export function expectedMappingRows(bindings: readonly IdentityBinding[]): Map<string, string> {
  const rows = new Map<string, string>();
  for (const binding of bindings) {
    const field = `${binding.scope.threadId}|${bindingScopeKey(binding)}`;
    if (!rows.has(field)) rows.set(field, encodeBindingRow(binding));
  }
  return rows;
}
