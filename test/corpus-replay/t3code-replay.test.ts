import { existsSync } from "node:fs";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { AgentEvidenceReplay } from "../../services/evidence-extractor/agent-replay.js";
import { corpusAvailable, corpusPath } from "../helpers/corpus.js";
import { createTestRedis, type TestRedis } from "../helpers/test-redis.js";
import { CLAUDE_EXPECTATIONS, CODEX_EXPECTATIONS, type ExpectedReplay } from "./expectations.js";
import { emittedEvidence, processAll, redisProcessor, TEST_LIMITS } from "./redis-replay.js";
import { summarize } from "./replay-summary.js";
import { t3codeRecords } from "./t3code-records.js";

const cases = [
  ...Object.entries(CLAUDE_EXPECTATIONS).map(([scenario, expected]) => ({
    scenario,
    file: "claude_transcript.ndjson",
    expected,
  })),
  ...Object.entries(CODEX_EXPECTATIONS).map(([scenario, expected]) => ({
    scenario,
    file: "codex_transcript.ndjson",
    expected,
  })),
];

describe.skipIf(!corpusAvailable)(
  "t3code recordings replayed through the evidence extractor (skipped: corpus absent)",
  () => {
    let t: TestRedis;
    beforeAll(() => {
      t = createTestRedis("t3replay");
    });
    afterAll(async () => {
      await t.cleanup();
    });

    it("has an expectation for every Claude and Codex recording in the corpus", async () => {
      const { readdirSync } = await import("node:fs");
      const recorded = readdirSync(corpusPath("t3code")).flatMap((scenario) =>
        ["claude_transcript.ndjson", "codex_transcript.ndjson"]
          .filter((file) => existsSync(corpusPath("t3code", scenario, file)))
          .map((file) => `${scenario}/${file}`),
      );
      expect(cases.map((entry) => `${entry.scenario}/${entry.file}`).sort()).toEqual(recorded.sort());
    });

    it.each(cases)(
      "$scenario/$file gives the memberships and outcomes its evidence proves",
      async ({ scenario, file, expected }) => {
        const { records, inputs } = t3codeRecords(
          corpusPath("t3code", scenario, file),
          `${scenario}-${file.slice(0, 6)}`,
        );
        const memory = new AgentEvidenceReplay(TEST_LIMITS);
        for (const record of records) memory.apply(record);
        expect(summarize(memory.evidence, inputs, expected)).toEqual(normalised(expected));

        const scoped = records.map((record) => ({ ...record, agentId: `${scenario}-${file.slice(0, 6)}` }));
        const { processor } = redisProcessor(t);
        await processAll(processor, scoped);
        const persisted = (await emittedEvidence(t)).filter((entry) => entry.agentId === scoped[0]?.agentId);
        expect(persisted).toEqual(
          memory.evidence.map((entry) => ({ ...entry, agentId: scoped[0]?.agentId })),
        );
      },
    );
  },
);

function normalised(expected: ExpectedReplay): ExpectedReplay {
  return {
    results: expected.results,
    ...(expected.unknown ? { unknown: expected.unknown } : {}),
    ...(expected.stops ? { stops: expected.stops } : {}),
  };
}
