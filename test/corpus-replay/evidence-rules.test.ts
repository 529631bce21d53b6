import { fileURLToPath } from "node:url";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import type { EngineRecord } from "../../libs/contract/pipeline-payloads.js";
import { AgentEvidenceReplay } from "../../services/evidence-extractor/agent-replay.js";
import { createTestRedis, type TestRedis } from "../helpers/test-redis.js";
import { fixtureRecords } from "./fixture-records.js";
import { emittedEvidence, processAll, redisProcessor, TEST_LIMITS } from "./redis-replay.js";
import { summarize, type ReplaySummary } from "./replay-summary.js";

const fixture = (name: string) => fileURLToPath(new URL(`./fixtures/${name}.ndjson`, import.meta.url));

describe("evidence rules on project fixtures in the engines' real formats", () => {
  let t: TestRedis;
  beforeAll(() => {
    t = createTestRedis("rules");
  });
  afterAll(async () => {
    await t.cleanup();
  });

  /** Replays through the pure reducer and through the Redis-backed processor; both must agree byte for byte. */
  async function replay(
    name: string,
    records?: EngineRecord[],
  ): Promise<ReplaySummary & { kinds: string[] }> {
    const loaded = fixtureRecords(fixture(name), `${name}-rt`);
    const input = records ?? loaded.records;
    const memory = new AgentEvidenceReplay(TEST_LIMITS);
    for (const record of input) memory.apply(record);
    const { processor } = redisProcessor(t);
    await processAll(processor, input);
    const persisted = (await emittedEvidence(t)).filter((entry) => entry.runtimeId.startsWith(`${name}-rt`));
    expect(persisted).toEqual(memory.evidence);
    const summary = summarize(memory.evidence, loaded.inputs, { results: [] });
    return { ...summary, kinds: memory.evidence.map((entry) => entry.kind) };
  }

  it("queued but unconsumed input stays pending while the result covers only A", async () => {
    const outcome = await replay("claude-queued-unconsumed");
    expect(outcome.results).toEqual([
      { members: ["A"], outcome: "completed", correlation: "native_exact", text: "The house is red." },
    ]);
    expect(outcome.unknown).toBeUndefined();
    expect(outcome.kinds).toEqual(["input.delivered", "input.consumed", "input.delivered", "turn.completed"]);
  });

  it("a queued input finishes later as its own result; a boundary without ids owns nothing once the CLI echoes", async () => {
    const outcome = await replay("claude-queued-consumed-later");
    expect(outcome.results.map((result) => [result.members, result.text])).toEqual([
      [["A"], "The house is red."],
      [["B"], "The garden is planted."],
    ]);
    expect(outcome.unknown).toBeUndefined();
  });

  it("background wakes, peer turns and sub-agent results own no input", async () => {
    const outcome = await replay("claude-background-wake");
    expect(outcome.results).toEqual([
      { members: ["A"], outcome: "completed", correlation: "ordinal", text: "Build started." },
      { members: ["B"], outcome: "completed", correlation: "ordinal", text: "Yes, the build is done." },
    ]);
  });

  it("an interrupt confirmed by the CLI gives stop.confirmed and a cancelled result", async () => {
    const outcome = await replay("claude-interrupt");
    expect(outcome.stops).toEqual(["S"]);
    expect(outcome.results).toEqual([
      { members: ["A"], outcome: "cancelled", correlation: "native_exact", text: "" },
    ]);
  });

  it("a success result with is_error is failed, never completed", async () => {
    const outcome = await replay("claude-is-error");
    expect(outcome.results).toEqual([
      {
        members: ["A"],
        outcome: "failed",
        correlation: "native_exact",
        text: "API Error: 401 Invalid authentication credentials",
      },
    ]);
  });

  it("a crash without a result gives no completion: the open input ends ENGINE_EXITED", async () => {
    const outcome = await replay("claude-crash");
    expect(outcome.results).toEqual([]);
    expect(outcome.unknown).toEqual([{ members: ["A"], reason: "ENGINE_EXITED" }]);
  });

  it("a new runtime of the agent supersedes one that never reported its exit; its input cannot be matched later", async () => {
    const { records } = fixtureRecords(fixture("claude-crash"), "claude-superseded-rt-1");
    const crashed = records.filter((record) => record.record.type !== "runtime_exited");
    const respawn: EngineRecord = {
      ...crashed[0]!,
      runtimeId: "claude-superseded-rt-2",
      seq: 1,
      receivedAt: crashed.at(-1)!.receivedAt + 1_000,
    };
    const late: EngineRecord = {
      ...respawn,
      seq: 2,
      record: {
        type: "inbound",
        raw: JSON.stringify({
          type: "result",
          subtype: "success",
          is_error: false,
          result: "late",
          user_message_uuids: ["dlv-A"],
        }),
      },
    };
    const memory = new AgentEvidenceReplay(TEST_LIMITS);
    for (const record of [...crashed, respawn, late]) memory.apply(record);
    const outcome = summarize(
      memory.evidence,
      [{ label: "A", deliveryId: "dlv-A", idempotencyKey: "key-A" }],
      { results: [] },
    );
    expect(outcome).toEqual({ results: [], unknown: [{ members: ["A"], reason: "ENGINE_EXITED" }] });
    const missing = memory.evidence.find((entry) => entry.kind === "evidence.missing");
    expect(missing).toMatchObject({
      runtimeId: "claude-superseded-rt-1",
      evidenceId: "claude-superseded-rt-2:1:evidence.missing:0",
    });
  });

  it("a queued attachment on a sibling branch (and on a sidechain) is not a member", async () => {
    const outcome = await replay("claude-transcript-sibling-branch");
    expect(outcome.results).toEqual([
      { members: ["A"], outcome: "completed", correlation: "fingerprint", text: "Four planes are red." },
    ]);
    expect(outcome.unknown).toBeUndefined();
  });

  it("identical pending prompts are ambiguous: both unknown, no result, no guess", async () => {
    const outcome = await replay("claude-transcript-identical-prompts");
    expect(outcome.results).toEqual([]);
    expect(outcome.unknown).toEqual([{ members: ["A", "B"], reason: "RESULT_EVIDENCE_MISSING" }]);
  });

  it("a chain that breaks before the human root fails closed", async () => {
    const outcome = await replay("claude-transcript-broken-chain");
    expect(outcome.results).toEqual([]);
    expect(outcome.unknown).toEqual([{ members: ["A"], reason: "RESULT_EVIDENCE_MISSING" }]);
  });

  it("A/B/C: only the inputs the turn shows are members; C acknowledged but never shown stays pending", async () => {
    const outcome = await replay("codex-abc");
    expect(outcome.results).toEqual([
      {
        members: ["A", "B"],
        outcome: "completed",
        correlation: "native_exact",
        text: "Built a house with a garden.",
      },
    ]);
    expect(outcome.unknown).toBeUndefined();
    expect(outcome.kinds.filter((kind) => kind === "input.consumed")).toHaveLength(2);
    expect(outcome.kinds.filter((kind) => kind === "input.delivered")).toHaveLength(4);
  });
});
