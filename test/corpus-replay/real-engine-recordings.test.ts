import { readFileSync, readdirSync } from "node:fs";
import { join } from "node:path";
import { describe, expect, it } from "vitest";
import { engineRecordSchema, type EngineRecord } from "../../libs/contract/pipeline-payloads.js";
import { AgentEvidenceReplay } from "../../services/evidence-extractor/agent-replay.js";
import { PROBE_INPUTS, type ConversationLine } from "../../tools/real-engines/probe-conversation.js";
import { projectRoot } from "../helpers/child-process.js";
import { TEST_LIMITS } from "./redis-replay.js";

/**
 * Issue 17: the probe conversation recorded from the real CLIs (`npm run engines:record`, committed as fixtures):
 * A starts a tool-use turn and B is written while the tool runs. Replayed through the evidence extractor, the one
 * result names both inputs by the engine's own echo — the proof the OS needs to speak it once.
 */
const FOLDER = join(projectRoot, "test", "fixtures", "real-engines");
const recordings = readdirSync(FOLDER).filter((name) => name.endsWith(".ndjson"));

function recordsOf(name: string): EngineRecord[] {
  const engine = name.startsWith("claude") ? "claude-stream-json" : "codex-app-server";
  const ids = engine === "claude-stream-json" ? "claude" : "codex";
  const lines = readFileSync(join(FOLDER, name), "utf8")
    .split("\n")
    .filter((line) => line !== "")
    .map((line) => JSON.parse(line) as ConversationLine);
  const inputFor = (frame: Record<string, unknown>) => {
    const text = JSON.stringify(frame);
    const which = (["A", "B"] as const).find((key) => text.includes(`"${PROBE_INPUTS[key][ids]}"`));
    if (!which || (frame.type !== "user" && frame.method !== "turn/start" && frame.method !== "turn/steer"))
      return undefined;
    return {
      deliveryId: PROBE_INPUTS[which][ids],
      deviceId: "lamp-1",
      idempotencyKey: `key-${which}`,
      kind: "input" as const,
      text: PROBE_INPUTS[which].text,
      mode:
        which === "A"
          ? ("direct" as const)
          : engine === "claude-stream-json"
            ? ("native_queue" as const)
            : ("steering" as const),
    };
  };
  const bodies: EngineRecord["record"][] = [
    { type: "runtime_started" },
    ...lines.map((line): EngineRecord["record"] => {
      const raw = JSON.stringify(line.frame);
      if (line.dir === "in") return { type: "inbound", raw };
      const input = inputFor(line.frame);
      return input ? { type: "outbound", raw, input } : { type: "outbound", raw };
    }),
  ];
  return bodies.map((record, index) =>
    engineRecordSchema.parse({
      agentId: "agent-1",
      machineId: "m1",
      engine,
      runtimeId: `recorded-${name}`,
      seq: index + 1,
      receivedAt: 1_000 + index,
      record,
    }),
  );
}

describe("recordings of the real CLIs replayed through the evidence extractor", () => {
  it("there is one recording per engine", () => {
    expect(recordings.map((name) => name.split("-")[0]).sort()).toEqual(["claude", "codex"]);
  });

  for (const name of recordings)
    it(`${name}: one completed turn names A and B, proven by the engine's own ids`, () => {
      const replay = new AgentEvidenceReplay(TEST_LIMITS);
      for (const record of recordsOf(name)) replay.apply(record);
      const turns = replay.evidence.flatMap((entry) => (entry.kind === "turn.completed" ? [entry] : []));
      expect(turns).toHaveLength(1);
      expect(turns[0]?.outcome).toBe("completed");
      expect(turns[0]?.fullText).toMatch(/^MERGED: Run the check\. \| (.|\n)*Also say FOLDED\./);
      expect(turns[0]?.members.map((member) => [member.idempotencyKey, member.correlation])).toEqual([
        ["key-A", expect.stringMatching(/^native_(exact|scoped)$/)],
        ["key-B", expect.stringMatching(/^native_(exact|scoped)$/)],
      ]);
      expect(replay.evidence.some((entry) => entry.kind === "evidence.missing")).toBe(false);
    });
});
