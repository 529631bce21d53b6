import { describe, expect, it } from "vitest";
import {
  engineRecordSchema,
  type EngineRecord,
  type HarnessEvidence,
} from "../../../libs/contract/pipeline-payloads.js";
import { TEST_LIMITS } from "../../../test/corpus-replay/redis-replay.js";
import { AgentEvidenceReplay } from "../agent-replay.js";

/** One step of an echo-less Claude runtime: we write input `label`, or the CLI prints a main-loop result. */
type Step = { write: string } | { result: string };

const RUNTIME = "echoless-rt";
const write = (label: string): Step => ({ write: label });
const result = (text: string): Step => ({ result: text });

/** The records the runner writes for these steps: frames in the CLI's format, without any echo of our ids. */
function records(steps: Step[]): EngineRecord[] {
  const bodies: EngineRecord["record"][] = [{ type: "runtime_started" }];
  for (const step of steps)
    bodies.push(
      "write" in step
        ? {
            type: "outbound",
            raw: JSON.stringify({
              type: "user",
              message: { role: "user", content: `prompt ${step.write}` },
              parent_tool_use_id: null,
              uuid: `dlv-${step.write}`,
            }),
            input: {
              deliveryId: `dlv-${step.write}`,
              deviceId: "lamp-1",
              idempotencyKey: `key-${step.write}`,
              kind: "input",
              text: `prompt ${step.write}`,
              mode: "direct",
            },
          }
        : {
            type: "inbound",
            raw: JSON.stringify({
              type: "result",
              subtype: "success",
              is_error: false,
              result: step.result,
              terminal_reason: "completed",
              session_id: "s-1",
            }),
          },
    );
  bodies.push({ type: "runtime_exited", code: 0, signal: null });
  return bodies.map((record, index) =>
    engineRecordSchema.parse({
      agentId: "agent-echoless",
      machineId: "m1",
      engine: "claude-stream-json",
      runtimeId: RUNTIME,
      seq: index + 1,
      receivedAt: 1_000 + index * 10,
      record,
    }),
  );
}

const label = (deliveryId: string) => deliveryId.replace(/^dlv-/, "");

/** How each input ended, in evidence order: `<label> <outcome> <correlation> <text>` or `<label> unknown <reason>`. */
function fates(steps: Step[]): string[] {
  const replay = new AgentEvidenceReplay(TEST_LIMITS);
  for (const record of records(steps)) replay.apply(record);
  return replay.evidence.flatMap((entry: HarnessEvidence) => {
    if (entry.kind === "turn.completed")
      return entry.members.map(
        (member) => `${label(member.deliveryId)} ${entry.outcome} ${member.correlation} ${entry.fullText}`,
      );
    if (entry.kind === "evidence.missing")
      return entry.members.map((member) => `${label(member.deliveryId)} unknown ${entry.reason}`);
    return [];
  });
}

describe("Claude stream-json without echoed ids: ordinal correlation recovers after an ambiguous boundary", () => {
  it("two inputs at one boundary end unknown; once their turns are accounted for, a later input is answered by ordinal", () => {
    expect(
      fates([write("A"), write("B"), result("FIRST"), result("SECOND"), write("C"), result("THIRD")]),
    ).toEqual([
      "A unknown RESULT_EVIDENCE_MISSING",
      "B unknown RESULT_EVIDENCE_MISSING",
      "C completed ordinal THIRD",
    ]);
  });

  it("an input outstanding together with an unaccounted pre-ambiguity input ends unknown at the next boundary, then the runtime recovers", () => {
    expect(
      fates([
        write("A"),
        write("B"),
        result("FIRST"),
        write("C"),
        result("SECOND"),
        result("THIRD"),
        write("D"),
        result("FOURTH"),
      ]),
    ).toEqual([
      "A unknown RESULT_EVIDENCE_MISSING",
      "B unknown RESULT_EVIDENCE_MISSING",
      "C unknown RESULT_EVIDENCE_MISSING",
      "D completed ordinal FOURTH",
    ]);
  });

  it("after a fold (one boundary for two inputs) every later input ends unknown at its boundary: nothing stays open", () => {
    expect(
      fates([
        write("A"),
        write("B"),
        result("BOTH"),
        write("C"),
        result("THIRD"),
        write("D"),
        result("FOURTH"),
      ]),
    ).toEqual([
      "A unknown RESULT_EVIDENCE_MISSING",
      "B unknown RESULT_EVIDENCE_MISSING",
      "C unknown RESULT_EVIDENCE_MISSING",
      "D unknown RESULT_EVIDENCE_MISSING",
    ]);
  });

  it("an input still waiting when the runtime exits ends ENGINE_EXITED, ambiguous ones are not reported twice", () => {
    expect(fates([write("A"), write("B"), result("FIRST"), write("C")])).toEqual([
      "A unknown RESULT_EVIDENCE_MISSING",
      "B unknown RESULT_EVIDENCE_MISSING",
      "C unknown ENGINE_EXITED",
    ]);
  });
});
