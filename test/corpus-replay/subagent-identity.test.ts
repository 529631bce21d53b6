import { describe, expect, it } from "vitest";
import { AgentEvidenceReplay } from "../../services/evidence-extractor/agent-replay.js";
import type { IdentityBinding } from "../../services/evidence-extractor/identity-binding.js";
import { corpusAvailable, corpusPath } from "../helpers/corpus.js";
import { TEST_LIMITS } from "./redis-replay.js";
import { t3codeRecords } from "./t3code-records.js";

/**
 * The execution tree each recording shows, by native ids: sub-agent turn -> its thread and the turn whose
 * spawnAgent / sendInput (v1 collabAgentToolCall) or subAgentActivity `started` (v2) made it run.
 */
const TREES: Record<string, Record<string, { thread: string; parentTurn: string }>> = {
  // Two siblings spawned by the one root turn.
  subagent: {
    "01a0d617-4f29-7d41-97e7-5f5c9a6d9cac": {
      thread: "01a0d617-4ebf-7b11-aa51-01f6319c42aa",
      parentTurn: "01a0d617-29e0-73d3-a4fd-856238566501",
    },
    "01a0d617-4f8e-7993-a236-90a7bef96a17": {
      thread: "01a0d617-4f5c-7f91-ae63-640360c8f198",
      parentTurn: "01a0d617-29e0-73d3-a4fd-856238566501",
    },
  },
  // A chain: each level's turn spawns the next level, all while the root turn is the active one.
  subagent_v2_nested: {
    "01a0d5ff-9316-70e0-8b04-dc9d2c8a9048": {
      thread: "01a0d5ff-92cd-7ec2-8304-862c24df32be",
      parentTurn: "01a0d5ff-7c5b-7bf1-a92a-39f93af77a6c",
    },
    "01a0d5ff-a1ff-7462-a959-ac53d5d6767f": {
      thread: "01a0d5ff-a1d3-7921-8098-5feebe2fa1b0",
      parentTurn: "01a0d5ff-9316-70e0-8b04-dc9d2c8a9048",
    },
    "01a0d5ff-c1a2-71d3-a4c7-c045737a0abc": {
      thread: "01a0d5ff-c174-7132-a46c-56af17f6faf3",
      parentTurn: "01a0d5ff-a1ff-7462-a959-ac53d5d6767f",
    },
  },
  subagent_v2_nested_approval: {
    "01a0da9f-3359-7762-b6d1-94a784f26d34": {
      thread: "01a0da9f-3324-7a33-98ce-cd8ed5c784ca",
      parentTurn: "01a0da9f-1b6f-7dd3-90da-e6c8797c1da6",
    },
    "01a0da9f-427e-7761-841f-b90e9d741e16": {
      thread: "01a0da9f-425a-7493-b914-42cc476e6513",
      parentTurn: "01a0da9f-3359-7762-b6d1-94a784f26d34",
    },
  },
  // The same sub-agent thread runs again from the second root turn (resumeAgent + sendInput).
  subagent_continue: {
    "01a0d5ff-f499-7400-b5ea-78decbe14f76": {
      thread: "01a0d5ff-f447-7232-b4c5-a772922bc24f",
      parentTurn: "01a0d5ff-d107-72b0-b80e-eee523c86b42",
    },
    "01a0d600-1bca-7842-8133-8d09cdc69651": {
      thread: "01a0d5ff-f447-7232-b4c5-a772922bc24f",
      parentTurn: "01a0d600-0899-7c10-9106-0eac1b8d18f9",
    },
  },
};

function replayBindings(scenario: string): IdentityBinding[] {
  const { records } = t3codeRecords(corpusPath("t3code", scenario, "codex_transcript.ndjson"), scenario);
  const replay = new AgentEvidenceReplay(TEST_LIMITS);
  for (const record of records) replay.apply(record);
  return replay.bindings;
}

function boundOnce(bindings: IdentityBinding[], kinds: string[], nativeRef: string): IdentityBinding {
  const found = bindings.filter(
    (binding) => kinds.includes(binding.appEntityKind) && binding.nativeRef === nativeRef,
  );
  expect(found, `${kinds.join("/")} ${nativeRef}`).toHaveLength(1);
  return found[0] as IdentityBinding;
}

describe.skipIf(!corpusAvailable)("Codex sub-agent threads as child nodes (skipped: corpus absent)", () => {
  it.each(Object.entries(TREES))(
    "%s: each sub-agent turn is a node under the turn that started it",
    (scenario, tree) => {
      const bindings = replayBindings(scenario);
      for (const [childTurn, { thread, parentTurn }] of Object.entries(tree)) {
        const node = boundOnce(bindings, ["node"], childTurn);
        const parent = boundOnce(bindings, ["provider_turn", "node"], parentTurn);
        const childThread = boundOnce(bindings, ["provider_thread"], thread);
        expect(node.scope.parentNodeId).toBe(parent.appEntityId);
        expect(node.scope.providerThreadId).toBe(childThread.appEntityId);
        expect(childThread.scope.parentNodeId).not.toBeNull();
      }
      const childTurns = bindings.filter((binding) => binding.appEntityKind === "node");
      expect(childTurns.map((binding) => binding.nativeRef).sort()).toEqual(Object.keys(tree).sort());
    },
  );

  it("a sub-agent thread is bound under the turn that spawned it, the root thread under none", () => {
    const bindings = replayBindings("subagent_v2_nested");
    const rootTurn = boundOnce(bindings, ["provider_turn"], "01a0d5ff-7c5b-7bf1-a92a-39f93af77a6c");
    const levelOne = boundOnce(bindings, ["node"], "01a0d5ff-9316-70e0-8b04-dc9d2c8a9048");
    expect(
      boundOnce(bindings, ["provider_thread"], "01a0d5ff-7b98-7e50-a216-1581ca5ebd3a").scope.parentNodeId,
    ).toBeNull();
    expect(
      boundOnce(bindings, ["provider_thread"], "01a0d5ff-92cd-7ec2-8304-862c24df32be").scope.parentNodeId,
    ).toBe(rootTurn.appEntityId);
    expect(
      boundOnce(bindings, ["provider_thread"], "01a0d5ff-a1d3-7921-8098-5feebe2fa1b0").scope.parentNodeId,
    ).toBe(levelOne.appEntityId);
  });
});
