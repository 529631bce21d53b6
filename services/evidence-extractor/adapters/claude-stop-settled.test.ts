import { describe, expect, it } from "vitest";
import { engineRecordSchema, type EngineRecord } from "../../../libs/contract/pipeline-payloads.js";
import { TEST_LIMITS } from "../../../test/corpus-replay/redis-replay.js";
import { AgentEvidenceReplay } from "../agent-replay.js";

const input = (deliveryId: string, kind: "input" | "stop", raw: object): EngineRecord["record"] => ({
  type: "outbound",
  raw: JSON.stringify(raw),
  input: { deliveryId, deviceId: "lamp-1", idempotencyKey: `key-${deliveryId}`, kind, mode: "direct" },
});

function replay(bodies: EngineRecord["record"][]): string[] {
  const agent = new AgentEvidenceReplay(TEST_LIMITS);
  [{ type: "runtime_started" } as const, ...bodies].forEach((record, index) =>
    agent.apply(
      engineRecordSchema.parse({
        agentId: "agent-stop",
        machineId: "m1",
        engine: "claude-stream-json",
        runtimeId: "rt-stop",
        seq: index + 1,
        receivedAt: 1_000 + index,
        record,
      }),
    ),
  );
  return agent.evidence.flatMap((entry) => {
    if (entry.kind === "turn.completed") return entry.members.map((m) => `${m.deliveryId} answered`);
    if (entry.kind === "stop.confirmed") return [`${entry.deliveryId} stop done`];
    return [];
  });
}

const writeA = input("dlv-A", "input", {
  type: "user",
  uuid: "dlv-A",
  message: { role: "user", content: "A" },
});
const interrupt = input("dlv-stop", "stop", {
  type: "control_request",
  request_id: "req-1",
  request: { subtype: "interrupt" },
});
const resultOfA = {
  type: "inbound" as const,
  raw: JSON.stringify({ type: "result", subtype: "success", result: "done", user_message_uuids: ["dlv-A"] }),
};

describe("Claude stream-json: a stop never answered by the engine", () => {
  it("is done when the turn it asked to stop completes, so its receipt does not stay open", () => {
    expect(replay([writeA, interrupt, resultOfA])).toEqual(["dlv-A answered", "dlv-stop stop done"]);
  });

  it("is confirmed once: the interrupt's late answer after the turn adds nothing", () => {
    const lateAnswer = {
      type: "inbound" as const,
      raw: JSON.stringify({
        type: "control_response",
        response: { subtype: "success", request_id: "req-1" },
      }),
    };
    expect(replay([writeA, interrupt, resultOfA, lateAnswer])).toEqual([
      "dlv-A answered",
      "dlv-stop stop done",
    ]);
  });
});
