import { describe, expect, it } from "vitest";
import type { EngineKind } from "../../libs/contract/engine.js";
import { engineRecordSchema, type EngineRecord } from "../../libs/contract/pipeline-payloads.js";
import { TEST_LIMITS } from "../../test/corpus-replay/redis-replay.js";
import { AgentEvidenceReplay } from "./agent-replay.js";

/** Issue 12 item 5: an engine request is bound to an app-owned id, and one still pending when the runtime ends fails closed. */
const INPUT = { deliveryId: "dlv-1", deviceId: "lamp-1", idempotencyKey: "key-1" };

function runtime(engine: EngineKind, bodies: EngineRecord["record"][]): EngineRecord[] {
  return [{ type: "runtime_started" as const }, ...bodies].map((record, index) =>
    engineRecordSchema.parse({
      agentId: "agent-1",
      machineId: "m1",
      engine,
      runtimeId: `${engine}-rt`,
      seq: index + 1,
      receivedAt: 1_000 + index,
      record,
    }),
  );
}

const written = (raw: unknown): EngineRecord["record"] => ({
  type: "outbound",
  raw: JSON.stringify(raw),
  input: { ...INPUT, kind: "input", text: "run the tests", mode: "direct" },
});
const inbound = (frame: unknown): EngineRecord["record"] => ({ type: "inbound", raw: JSON.stringify(frame) });
const answer = (frame: unknown): EngineRecord["record"] => ({ type: "outbound", raw: JSON.stringify(frame) });
const exited: EngineRecord["record"] = { type: "runtime_exited", code: null, signal: "SIGKILL" };

const claudeInput = { type: "user", message: { role: "user", content: "run the tests" }, uuid: "dlv-1" };
const claudePrompt = {
  type: "control_request",
  request_id: "perm-1",
  request: { subtype: "can_use_tool", tool_name: "Bash", input: { command: "npm test" } },
};
const claudeAnswer = {
  type: "control_response",
  response: { subtype: "success", request_id: "perm-1", response: { behavior: "deny", message: "no" } },
};
const codexApproval = { id: 0, method: "item/commandExecution/requestApproval", params: { threadId: "T" } };

function replay(records: EngineRecord[]) {
  const extractor = new AgentEvidenceReplay(TEST_LIMITS);
  for (const record of records) extractor.apply(record);
  return extractor;
}
const missingReasons = (extractor: AgentEvidenceReplay) =>
  extractor.evidence.flatMap((entry) => (entry.kind === "evidence.missing" ? [entry.reason] : []));

describe("engine requests in the evidence", () => {
  it("claude: a permission prompt gets a request binding; pending at exit, the input ends REQUEST_NOT_RESUMABLE", () => {
    const extractor = replay(
      runtime("claude-stream-json", [written(claudeInput), inbound(claudePrompt), exited]),
    );
    expect(extractor.bindings.filter((binding) => binding.appEntityKind === "request")).toMatchObject([
      { nativeKind: "can_use_tool", nativeRef: "perm-1", correlation: "native_exact" },
    ]);
    expect(missingReasons(extractor)).toEqual(["REQUEST_NOT_RESUMABLE"]);
  });

  it("claude: once the runner's answer is recorded, an exit is an ordinary ENGINE_EXITED", () => {
    const extractor = replay(
      runtime("claude-stream-json", [
        written(claudeInput),
        inbound(claudePrompt),
        answer(claudeAnswer),
        exited,
      ]),
    );
    expect(missingReasons(extractor)).toEqual(["ENGINE_EXITED"]);
  });

  it("codex: a server request pending when a new runtime supersedes this one ends its input REQUEST_NOT_RESUMABLE", () => {
    const first = runtime("codex-app-server", [
      written({ id: 3, method: "turn/start", params: { threadId: "T", clientUserMessageId: "dlv-1" } }),
      inbound(codexApproval),
    ]);
    const restarted = engineRecordSchema.parse({
      ...first[0],
      runtimeId: "codex-rt-2",
      seq: 1,
      receivedAt: 5_000,
    });
    const extractor = replay([...first, restarted]);
    const request = extractor.bindings.find((binding) => binding.appEntityKind === "request");
    expect(request).toMatchObject({ nativeKind: "item/commandExecution/requestApproval", nativeRef: "0" });
    expect(request?.appEntityId).toMatch(/^request:[0-9a-f]{32}$/);
    expect(missingReasons(extractor)).toEqual(["REQUEST_NOT_RESUMABLE"]);
  });

  it("codex: an answered request leaves nothing pending", () => {
    const extractor = replay(
      runtime("codex-app-server", [
        written({ id: 3, method: "turn/start", params: { threadId: "T", clientUserMessageId: "dlv-1" } }),
        inbound(codexApproval),
        answer({ id: 0, result: { decision: "decline" } }),
        exited,
      ]),
    );
    expect(missingReasons(extractor)).toEqual(["ENGINE_EXITED"]);
  });
});
