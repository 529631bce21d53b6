import { STREAM_CATALOG } from "../../libs/contract/catalog.js";
import { readdirSync } from "node:fs";
import { fileURLToPath } from "node:url";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { engineRecordEntry, type EngineRecord } from "../../libs/contract/pipeline-payloads.js";
import { PAYLOAD_FIELD } from "../../libs/streams/stream-writer.js";
import { AgentEvidenceReplay } from "../../services/evidence-extractor/agent-replay.js";
import { TsProcess } from "../helpers/child-process.js";
import { createTestRedis, waitFor, type TestRedis } from "../helpers/test-redis.js";
import { fixtureRecords } from "./fixture-records.js";
import {
  evidencePayloads,
  expectedMappingRows,
  processAll,
  redisProcessor,
  storedMappingRows,
  TEST_LIMITS,
} from "./redis-replay.js";

const fixturesDir = fileURLToPath(new URL("./fixtures/", import.meta.url));
const AGENTS = 12;

/** Every fixture, once per agent: ~1k records over 120 runtimes of four engine formats. */
function workload(): EngineRecord[] {
  const files = readdirSync(fixturesDir)
    .filter((name) => name.endsWith(".ndjson"))
    .sort();
  const records: EngineRecord[] = [];
  for (let agent = 0; agent < AGENTS; agent += 1)
    for (const file of files) {
      const { records: own } = fixtureRecords(
        `${fixturesDir}${file}`,
        `${file.replace(".ndjson", "")}-${agent}`,
      );
      records.push(...own.map((record) => ({ ...record, agentId: `agent-${agent}` })));
    }
  return records;
}

function reference(records: EngineRecord[]) {
  const byAgent = new Map<string, AgentEvidenceReplay>();
  for (const record of records) {
    const replay = byAgent.get(record.agentId) ?? new AgentEvidenceReplay(TEST_LIMITS);
    byAgent.set(record.agentId, replay);
    replay.apply(record);
  }
  const replays = [...byAgent.values()];
  return {
    evidence: replays.flatMap((replay) => replay.evidence).map((entry) => JSON.stringify(entry)),
    bindings: replays.flatMap((replay) => replay.bindings),
  };
}

const storedBindings = (t: TestRedis, records: EngineRecord[]) =>
  storedMappingRows(
    t,
    records.map((record) => record.agentId),
  );

/** Same evidenceId always carries the same bytes; deduped by id, the stream equals the reference. */
function dedupedById(payloads: string[]): string[] {
  const seen = new Map<string, string>();
  for (const raw of payloads) {
    const id = (JSON.parse(raw) as { evidenceId: string }).evidenceId;
    const earlier = seen.get(id);
    if (earlier !== undefined) expect(raw).toBe(earlier);
    else seen.set(id, raw);
  }
  return [...seen.values()];
}

describe("replay determinism of the evidence extractor", () => {
  const records = workload();
  const expected = reference(records);
  let first: TestRedis;
  let second: TestRedis;
  beforeAll(() => {
    first = createTestRedis("determinism1");
    second = createTestRedis("determinism2");
  });
  afterAll(async () => {
    await first.cleanup();
    await second.cleanup();
  });

  it("processing the same records twice emits nothing new and finds the existing bindings", async () => {
    const { processor } = redisProcessor(first);
    await processAll(processor, records);
    const once = await evidencePayloads(first);
    const bindingsOnce = await storedBindings(first, records);
    await processAll(processor, records);
    expect(await evidencePayloads(first)).toEqual(once);
    expect(await storedBindings(first, records)).toEqual(bindingsOnce);
    expect(once).toEqual(expected.evidence);
    expect(bindingsOnce).toEqual(expectedMappingRows(expected.bindings));
  });

  it("survives SIGKILL of the extractor process mid-stream with byte-identical evidence and bindings", async () => {
    const streamKey = second.keys.stream(STREAM_CATALOG.engineRecords.name);
    const batch = second.redis.pipeline();
    for (const record of records)
      batch.xadd(streamKey, "*", PAYLOAD_FIELD, JSON.stringify(engineRecordEntry([record])));
    await batch.exec();
    const extractor = new TsProcess("services/evidence-extractor/main.ts", {
      REDIS_URL: second.url,
      KEY_PREFIX: second.keys.prefix,
      STREAM_PARTITIONS: String(second.keys.partitions),
      PORT: "0",
      LOG_LEVEL: "info",
      CONSUMER_NAME: "extractor-under-test",
      STREAM_BATCH_SIZE: "16",
      STREAM_CLAIM_MIN_IDLE_MS: "500",
    });
    try {
      await extractor.waitForOutput("services started");
      const partial = await waitFor(
        () => second.redis.xlen(second.keys.stream(STREAM_CATALOG.harnessEvidence.name)),
        (length) => length >= expected.evidence.length / 5,
        { timeoutMs: 20_000, intervalMs: 2 },
      );
      await extractor.kill("SIGKILL");
      expect(partial).toBeLessThan(expected.evidence.length);
      await extractor.restart();
      const settled = await waitFor(
        async () => dedupedById(await evidencePayloads(second)).length,
        (count) => count >= expected.evidence.length,
        { timeoutMs: 30_000, intervalMs: 50 },
      );
      expect(settled).toBe(expected.evidence.length);
      const persisted = dedupedById(await evidencePayloads(second));
      expect(new Set(persisted)).toEqual(new Set(expected.evidence));
      for (const runtime of new Set(records.map((record) => record.runtimeId))) {
        const ofRuntime = (list: string[]) =>
          list.filter((raw) =>
            (JSON.parse(raw) as { evidenceId: string }).evidenceId.startsWith(`${runtime}:`),
          );
        expect(ofRuntime(persisted)).toEqual(ofRuntime(expected.evidence));
      }
      expect(await storedBindings(second, records)).toEqual(expectedMappingRows(expected.bindings));
    } finally {
      await extractor.kill("SIGKILL");
    }
  }, 90_000);
});
