import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { AgentEvidenceReplay } from "../../services/evidence-extractor/agent-replay.js";
import { corpusAvailable, corpusPath } from "../helpers/corpus.js";
import { createTestRedis, type TestRedis } from "../helpers/test-redis.js";
import { captureRecords } from "./capture-records.js";
import { CAPTURE_EXPECTATIONS } from "./expectations.js";
import { emittedEvidence, processAll, redisProcessor, TEST_LIMITS } from "./redis-replay.js";
import { summarize } from "./replay-summary.js";

const captures = Object.entries(CAPTURE_EXPECTATIONS).map(([file, expected]) => ({ file, ...expected }));

describe.skipIf(!corpusAvailable)("openharness summary-correlation captures (skipped: corpus absent)", () => {
  let t: TestRedis;
  beforeAll(() => {
    t = createTestRedis("capture");
  });
  afterAll(async () => {
    await t.cleanup();
  });

  it.each(captures)(
    "$file: A and B form one group with the recorded final text",
    async ({ file, engine, results }) => {
      const { records, inputs } = captureRecords(
        corpusPath("openharness", "summary-correlation", file),
        engine,
        `tail-${engine}`,
      );
      const memory = new AgentEvidenceReplay(TEST_LIMITS);
      for (const record of records) memory.apply(record);
      expect(summarize(memory.evidence, inputs, { results: [...results] })).toEqual({ results });

      const { processor } = redisProcessor(t);
      await processAll(processor, records);
      const persisted = (await emittedEvidence(t)).filter((entry) => entry.runtimeId === `tail-${engine}`);
      expect(persisted).toEqual(memory.evidence);
      // The transcript proves consumption only at the boundary; the rollout at each user row (turn_id metadata).
      const consumedEarly = engine === "codex-rollout";
      expect(persisted.map((entry) => entry.kind)).toEqual(
        consumedEarly
          ? ["input.delivered", "input.consumed", "input.delivered", "input.consumed", "turn.completed"]
          : ["input.delivered", "input.delivered", "input.consumed", "input.consumed", "turn.completed"],
      );
    },
  );
});
