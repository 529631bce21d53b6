import { readdirSync } from "node:fs";
import { fileURLToPath } from "node:url";
import { Registry } from "prom-client";
import { afterEach, beforeEach, describe, expect, it } from "vitest";
import type { EngineRecord } from "../../libs/contract/pipeline-payloads.js";
import { fixtureRecords } from "../../test/corpus-replay/fixture-records.js";
import {
  evidencePayloads,
  expectedMappingRows,
  storedMappingRows,
  TEST_LIMITS,
} from "../../test/corpus-replay/redis-replay.js";
import { createTestRedis, type TestRedis } from "../../test/helpers/test-redis.js";
import { AgentEvidenceReplay } from "./agent-replay.js";
import { EvidenceStore, type LoadedRuntime } from "./evidence-store.js";
import { extractorMetrics } from "./extractor-metrics.js";
import { RecordBatch } from "./record-batch.js";
import { RecordProcessor } from "./record-processor.js";

const fixturesDir = fileURLToPath(new URL("../../test/corpus-replay/fixtures/", import.meta.url));
const fixtureFiles = readdirSync(fixturesDir)
  .filter((name) => name.endsWith(".ndjson"))
  .sort();

interface Entry {
  id: string;
  payload: EngineRecord;
}

/** Every fixture as its own runtime of `agents` agents, interleaved record by record like concurrent runtimes. */
function interleaved(agents: number): Entry[] {
  const runtimes: EngineRecord[][] = [];
  for (let agent = 0; agent < agents; agent += 1)
    for (const file of fixtureFiles) {
      const { records } = fixtureRecords(`${fixturesDir}${file}`, `${file.replace(".ndjson", "")}-${agent}`);
      runtimes.push(records.map((record) => ({ ...record, agentId: `agent-${agent}` })));
    }
  const records: EngineRecord[] = [];
  for (let index = 0; runtimes.some((runtime) => index < runtime.length); index += 1)
    for (const runtime of runtimes) if (index < runtime.length) records.push(runtime[index] as EngineRecord);
  return records.map((payload, index) => ({ id: `0-${index + 1}`, payload }));
}

function reference(entries: Entry[]) {
  const byAgent = new Map<string, AgentEvidenceReplay>();
  for (const { payload } of entries) {
    const replay = byAgent.get(payload.agentId) ?? new AgentEvidenceReplay(TEST_LIMITS);
    byAgent.set(payload.agentId, replay);
    replay.apply(payload);
  }
  const replays = [...byAgent.values()];
  return {
    evidence: replays.flatMap((replay) => replay.evidence).map((entry) => JSON.stringify(entry)),
    bindings: expectedMappingRows(replays.flatMap((replay) => replay.bindings)),
  };
}

const evidenceId = (raw: string) => (JSON.parse(raw) as { evidenceId: string }).evidenceId;
const ofRuntime = (list: string[], runtimeId: string) =>
  list.filter((raw) => evidenceId(raw).startsWith(`${runtimeId}:`));

let t: TestRedis;
let store: EvidenceStore;

function paths(evidenceStore: EvidenceStore) {
  const metrics = extractorMetrics(new Registry());
  return {
    batch: new RecordBatch({ store: evidenceStore, limits: TEST_LIMITS, metrics }),
    processor: new RecordProcessor({ store: evidenceStore, limits: TEST_LIMITS, orderWaitMs: 0, metrics }),
  };
}

/** What the stream consumer does with a read batch: the batch path first, then what it left, one by one. */
async function consume(entries: Entry[], batchSize: number, evidenceStore = store): Promise<number> {
  const { batch, processor } = paths(evidenceStore);
  let undone = 0;
  for (let start = 0; start < entries.length; start += batchSize) {
    const left = await batch.process(entries.slice(start, start + batchSize));
    undone += left.length;
    for (const entry of left) await processor.process(entry.payload);
  }
  return undone;
}

const storedBindings = (entries: Entry[]) =>
  storedMappingRows(
    t,
    entries.map(({ payload }) => payload.agentId),
  );

beforeEach(() => {
  t = createTestRedis("record-batch");
  store = new EvidenceStore(t.redis, t.keys, 60_000);
});

afterEach(async () => {
  await t.cleanup();
});

describe("record batch of the evidence extractor", () => {
  it("persists read batches per runtime with the per-record path's evidence, order and bindings; a second pass emits nothing", async () => {
    const entries = interleaved(3);
    const expected = reference(entries);
    const undone = await consume(entries, 64);
    // Every runtime starts in the first read batch, so that batch (each runtime_started and its agent's later
    // entries) takes the per-record path; the remaining 197 records go through the batch path.
    expect([undone, entries.length]).toEqual([64, 261]);
    const once = await evidencePayloads(t);
    expect(new Set(once)).toEqual(new Set(expected.evidence));
    expect(once).toHaveLength(expected.evidence.length);
    for (const runtimeId of new Set(entries.map(({ payload }) => payload.runtimeId)))
      expect(ofRuntime(once, runtimeId)).toEqual(ofRuntime(expected.evidence, runtimeId));
    expect(await storedBindings(entries)).toEqual(expected.bindings);

    expect(await consume(entries, 64)).toBe(undone);
    expect(await evidencePayloads(t)).toEqual(once);
    expect(await storedBindings(entries)).toEqual(expected.bindings);
  });

  it("applies a runtime up to a seq gap, skips what was applied, and leaves the rest for the per-record path", async () => {
    const runtime = interleaved(1).filter(({ payload }) => payload.runtimeId === "codex-abc-0");
    const bySeq = (seq: number) => runtime.find(({ payload }) => payload.seq === seq) as Entry;
    const { batch, processor } = paths(store);
    for (const seq of [1, 2, 3]) await processor.process(bySeq(seq).payload);

    const left = await batch.process([2, 3, 4, 5, 7, 8].map(bySeq));
    expect(left.map(({ payload }) => payload.seq)).toEqual([7, 8]);
    expect((await store.load("agent-0", "codex-abc-0")).seq).toBe(5);

    expect(await batch.process(runtime.filter(({ payload }) => payload.seq >= 6))).toEqual([]);
    expect((await store.load("agent-0", "codex-abc-0")).seq).toBe(runtime.length);
    expect(await evidencePayloads(t)).toEqual(reference(runtime).evidence);
  });

  it("leaves a runtime to the per-record path when another consumer advanced it first, without losing records", async () => {
    const runtime = interleaved(1).filter(({ payload }) => payload.runtimeId === "codex-abc-0");
    const { processor } = paths(store);
    for (const { payload } of runtime.slice(0, 3)) await processor.process(payload);
    /** Another consumer applies the next record between our state load and our CAS. */
    class RacedStore extends EvidenceStore {
      override async load(agentId: string, runtimeId: string): Promise<LoadedRuntime> {
        const loaded = await super.load(agentId, runtimeId);
        await processor.process((runtime[3] as Entry).payload);
        return loaded;
      }
    }
    const raced = new RacedStore(t.redis, t.keys, 60_000);
    const left = await paths(raced).batch.process(runtime.slice(3, 10));
    expect(left.map(({ payload }) => payload.seq)).toEqual([4, 5, 6, 7, 8, 9, 10]);
    expect((await store.load("agent-0", "codex-abc-0")).seq).toBe(4);

    for (const entry of left) await processor.process(entry.payload);
    await consume(runtime.slice(10), 8);
    const emitted = await evidencePayloads(t);
    const firstById = new Map<string, string>();
    for (const raw of emitted) {
      const earlier = firstById.get(evidenceId(raw));
      if (earlier !== undefined) expect(raw).toBe(earlier);
      else firstById.set(evidenceId(raw), raw);
    }
    expect([...firstById.values()]).toEqual(reference(runtime).evidence);
  });

  it("does not read back a runtime it advanced; when another consumer moved it on, the CAS catches it and the store is read again", async () => {
    const runtime = interleaved(1)
      .filter(({ payload }) => payload.runtimeId === "codex-abc-0")
      .sort((a, b) => a.payload.seq - b.payload.seq);
    const { processor } = paths(store);
    await processor.process((runtime[0] as Entry).payload);
    let loads = 0;
    class CountingStore extends EvidenceStore {
      override async load(agentId: string, runtimeId: string): Promise<LoadedRuntime> {
        loads += 1;
        return super.load(agentId, runtimeId);
      }
    }
    const { batch } = paths(new CountingStore(t.redis, t.keys, 60_000));
    expect(await batch.process(runtime.slice(1, 4))).toEqual([]);
    expect(await batch.process(runtime.slice(4, 7))).toEqual([]);
    expect(loads).toBe(1);

    // Another consumer applies seq 8 while this one still holds seq 7: its batch from 8 loses the CAS.
    await processor.process((runtime[7] as Entry).payload);
    const left = await batch.process(runtime.slice(7, 9));
    expect(left.map(({ payload }) => payload.seq)).toEqual([8, 9]);
    for (const entry of left) await processor.process(entry.payload);
    expect(await batch.process(runtime.slice(9))).toEqual([]);
    expect(loads).toBe(2);
    expect((await store.load("agent-0", "codex-abc-0")).seq).toBe(runtime.length);
    const firstById = new Map<string, string>();
    for (const raw of await evidencePayloads(t)) {
      const earlier = firstById.get(evidenceId(raw));
      if (earlier !== undefined) expect(raw).toBe(earlier);
      else firstById.set(evidenceId(raw), raw);
    }
    expect([...firstById.values()]).toEqual(reference(runtime).evidence);
  });
});
