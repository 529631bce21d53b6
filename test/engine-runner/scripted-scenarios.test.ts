import { readdirSync } from "node:fs";
import { join } from "node:path";
import { describe, expect, it, vi } from "vitest";
import type { EngineRecord, HarnessEvidence } from "../../libs/contract/pipeline-payloads.js";
import { AgentEvidenceReplay } from "../../services/evidence-extractor/agent-replay.js";
import { TEST_LIMITS } from "../corpus-replay/redis-replay.js";
import { projectRoot } from "../helpers/child-process.js";
import { engineSimAgent, loggedInputs, type EngineSimAgent } from "./agents-file.js";
import { hasInbound, inboundFrames, runtimesOf, seqGapFree, waitForRecords } from "./engine-records.js";
import { useRunnerSuite } from "./runner-process.js";

// Real engine processes boot through tsx; on a loaded machine that takes seconds each.
vi.setConfig({ testTimeout: 150_000, hookTimeout: 150_000 });
const MACHINE = "machine-scripted";
type Frame = Record<string, unknown>;

/** The documented engine behaviours; `e2e-*` and `chaos-*` scenarios belong to (and are exercised by) those suites. */
const scenarioNames = readdirSync(join(projectRoot, "test", "fixtures", "engine-scenarios"))
  .filter((file) => file.endsWith(".json") && file !== "codex-handshake.json")
  .filter((file) => !file.startsWith("e2e-") && !file.startsWith("chaos-"))
  .map((file) => file.replace(/\.json$/, ""));

const isMainResult = (frame: Frame) => frame.type === "result" && (frame.parent_tool_use_id ?? null) === null;
const method = (name: string) => (frame: Frame) => frame.method === name;
const lifecycle = (frames: Frame[], uuid: string) =>
  frames
    .filter((frame) => frame.type === "command_lifecycle" && frame.command_uuid === uuid)
    .map((f) => f.state);
const outbound = (records: EngineRecord[]) =>
  records.flatMap((entry) => (entry.record.type === "outbound" ? [entry.record] : []));
const inputsOf = (records: EngineRecord[]) => outbound(records).filter((body) => body.input !== undefined);
/** [JSON-RPC method, deliveryId, mode] of each input written to a codex engine. */
const requestsOf = (inputs: ReturnType<typeof inputsOf>) =>
  inputs.map((body) => [(JSON.parse(body.raw) as Frame).method, body.input?.deliveryId, body.input?.mode]);
const params = (frame: Frame) => frame.params as Frame;
/** The extractor's evidence for these records (the pure reducer), reduced to what decides each receipt. */
const evidenceOf = (records: EngineRecord[]) => {
  const replay = new AgentEvidenceReplay(TEST_LIMITS);
  for (const entry of records) replay.apply(entry);
  return replay.evidence.map((entry: HarnessEvidence) => {
    switch (entry.kind) {
      case "turn.completed":
        return [
          entry.kind,
          entry.members.map((m) => [m.deliveryId, m.correlation]),
          entry.outcome,
          entry.fullText,
        ];
      case "evidence.missing":
        return [entry.kind, entry.members.map((m) => m.deliveryId), entry.reason];
      case "input.consumed":
        return [entry.kind, entry.deliveryId, entry.correlation];
      default:
        return [entry.kind, "deliveryId" in entry ? entry.deliveryId : null];
    }
  });
};
const item = (frame: Frame) => ((frame.params as Frame | undefined)?.item ?? {}) as Frame;

describe("engine-runner + engine-sim scripted scenarios (real processes)", () => {
  const agents = new Map<string, EngineSimAgent>();
  const s = useRunnerSuite("scripted", MACHINE, (workDir) => {
    for (const scenario of scenarioNames)
      agents.set(
        scenario,
        engineSimAgent({
          agentId: scenario,
          machineId: MACHINE,
          protocol: scenario.startsWith("codex") ? "codex-app-server" : "claude-stream-json",
          scenario,
          workDir,
        }),
      );
    return [...agents.values()].map((agent) => agent.config);
  });

  const records = (agentId: string, accept: (records: EngineRecord[]) => boolean) =>
    waitForRecords(s.t.redis, s.t.keys, agentId, accept);
  const until = (agentId: string, test: (frame: Frame) => boolean, count = 1) =>
    records(agentId, (all) => inboundFrames(all).filter(test).length >= count);
  /** Each input reached the engine's stdin exactly once. */
  const writtenOnce = (agentId: string, ...deliveryIds: string[]) => {
    const lines = loggedInputs(agents.get(agentId) as EngineSimAgent).map((line) => JSON.stringify(line));
    for (const id of deliveryIds) expect(lines.filter((line) => line.includes(id))).toHaveLength(1);
  };

  it("claude steer folded at a tool boundary: B consumed mid-turn, one result lists [A, B]", async () => {
    const agent = "claude-steer-folded-at-tool-boundary";
    const a = await s.send.input(agent, "Run the check");
    const b = await s.send.input(agent, "Also say FOLDED");
    const all = await until(
      agent,
      (frame) => frame.type === "command_lifecycle" && frame.state === "completed",
      2,
    );
    expect(inputsOf(all).map((body) => [body.input?.deliveryId, body.input?.mode])).toEqual([
      [a.deliveryId, "direct"],
      [b.deliveryId, "native_queue"],
    ]);
    expect(inputsOf(all).map((body) => (JSON.parse(body.raw) as Frame).uuid)).toEqual([
      a.deliveryId,
      b.deliveryId,
    ]);
    const frames = inboundFrames(all);
    expect(frames.filter(isMainResult).map((frame) => frame.user_message_uuids)).toEqual([
      [a.deliveryId, b.deliveryId],
    ]);
    expect(lifecycle(frames, b.deliveryId)).toEqual(["queued", "started", "completed"]);
    expect(seqGapFree(all)).toBe(true);
    writtenOnce(agent, a.deliveryId, b.deliveryId);
  });

  it("claude message queued to the next turn: result 1 lists [A], result 2 lists [B]", async () => {
    const agent = "claude-queued-to-next-turn";
    const a = await s.send.input(agent, "First");
    const b = await s.send.input(agent, "Second");
    const all = await until(agent, isMainResult, 2);
    expect(inputsOf(all).map((body) => body.input?.mode)).toEqual(["direct", "native_queue"]);
    expect(
      inboundFrames(all)
        .filter(isMainResult)
        .map((frame) => frame.user_message_uuids),
    ).toEqual([[a.deliveryId], [b.deliveryId]]);
    writtenOnce(agent, a.deliveryId, b.deliveryId);
  });

  it("claude interrupt that cancels the queued input: control_request carries the stop's deliveryId, aborted_tools", async () => {
    const agent = "claude-interrupt-cancels-queued";
    const a = await s.send.input(agent, "Run a long command");
    const b = await s.send.input(agent, "Then this");
    const stop = await s.send.stop(agent);
    const all = await until(
      agent,
      (frame) => frame.type === "command_lifecycle" && frame.state === "cancelled",
    );
    const stopRecord = inputsOf(all).find((body) => body.input?.kind === "stop");
    expect(stopRecord?.raw).toBe(
      JSON.stringify({
        type: "control_request",
        request_id: stop.deliveryId,
        request: { subtype: "interrupt" },
      }),
    );
    expect(stopRecord?.input).toEqual({
      deliveryId: stop.deliveryId,
      deviceId: stop.deviceId,
      idempotencyKey: stop.idempotencyKey,
      kind: "stop",
      mode: "direct",
    });
    const frames = inboundFrames(all);
    expect(frames.find((frame) => frame.type === "control_response")).toEqual({
      type: "control_response",
      response: { subtype: "success", request_id: stop.deliveryId },
    });
    const results = frames.filter(isMainResult);
    expect(results.map((frame) => [frame.terminal_reason, frame.is_error, frame.user_message_uuids])).toEqual(
      [["aborted_tools", true, [a.deliveryId]]],
    );
    expect(lifecycle(frames, b.deliveryId)).toEqual(["queued", "cancelled"]);
    writtenOnce(agent, a.deliveryId, b.deliveryId, stop.deliveryId);
  });

  it("claude interrupt that keeps the queued input: A ends aborted_streaming, B then runs as its own turn", async () => {
    const agent = "claude-interrupt-keeps-queued";
    const a = await s.send.input(agent, "Stream something long");
    const b = await s.send.input(agent, "Next");
    await s.send.stop(agent);
    const all = await until(agent, isMainResult, 2);
    expect(
      inboundFrames(all)
        .filter(isMainResult)
        .map((frame) => [frame.subtype, frame.terminal_reason, frame.user_message_uuids]),
    ).toEqual([
      ["error_during_execution", "aborted_streaming", [a.deliveryId]],
      ["success", "completed", [b.deliveryId]],
    ]);
  });

  it("claude authentication failure: subtype success with is_error true and api_error_status 401", async () => {
    const agent = "claude-auth-failure-401";
    const a = await s.send.input(agent, "Hello");
    const all = await until(agent, isMainResult);
    const result = inboundFrames(all).find(isMainResult) as Frame;
    expect([result.subtype, result.is_error, result.api_error_status, result.user_message_uuids]).toEqual([
      "success",
      true,
      401,
      [a.deliveryId],
    ]);
  });

  it("claude error_max_turns result", async () => {
    const agent = "claude-error-max-turns";
    const a = await s.send.input(agent, "Read everything");
    const all = await until(agent, isMainResult);
    const result = inboundFrames(all).find(isMainResult) as Frame;
    expect([result.subtype, result.is_error, result.user_message_uuids, "result" in result]).toEqual([
      "error_max_turns",
      true,
      [a.deliveryId],
      false,
    ]);
  });

  it("claude background wake: a second result with origin task-notification and no input uuids", async () => {
    const agent = "claude-background-wake";
    const a = await s.send.input(agent, "Start a background task");
    const all = await until(agent, isMainResult, 2);
    const [first, wake] = inboundFrames(all).filter(isMainResult) as [Frame, Frame];
    expect(first.user_message_uuids).toEqual([a.deliveryId]);
    expect(wake.origin).toEqual({ kind: "task-notification" });
    expect("user_message_uuids" in wake).toBe(false);
    expect(inputsOf(all)).toHaveLength(1);
  });

  it("claude sub-agent frames carry parent_tool_use_id, including the sub-agent's own result", async () => {
    const agent = "claude-subagent-frames";
    const a = await s.send.input(agent, "Delegate the check");
    const all = await until(agent, isMainResult);
    const results = inboundFrames(all).filter((frame) => frame.type === "result");
    expect(results.map((frame) => [typeof frame.parent_tool_use_id, frame.result])).toEqual([
      ["string", "SUB_OK"],
      ["undefined", "ROOT_DONE: SUB_OK"],
    ]);
    expect(results[1]?.user_message_uuids).toEqual([a.deliveryId]);
    expect(inboundFrames(all).filter((frame) => frame.parent_tool_use_id).length).toBeGreaterThanOrEqual(3);
  });

  it("claude crash without a result: runtime_exited code 1, restart is a new runtime that answers the next input", async () => {
    const agent = "claude-crash-without-result";
    const a = await s.send.input(agent, "This one crashes");
    await records(agent, (all) => runtimesOf(all).length >= 2);
    const b = await s.send.input(agent, "After the restart");
    const all = await until(agent, isMainResult);
    const [first, second] = runtimesOf(all);
    const firstRuntime = all.filter((entry) => entry.runtimeId === first);
    expect(firstRuntime[0]?.record.type).toBe("runtime_started");
    expect(firstRuntime.at(-1)?.record).toEqual({ type: "runtime_exited", code: 1, signal: null });
    expect(inboundFrames(firstRuntime).some(isMainResult)).toBe(false);
    const secondRuntime = all.filter((entry) => entry.runtimeId === second);
    expect(inputsOf(secondRuntime).map((body) => [body.input?.deliveryId, body.input?.mode])).toEqual([
      [b.deliveryId, "direct"],
    ]);
    expect(inboundFrames(secondRuntime).find(isMainResult)?.user_message_uuids).toEqual([b.deliveryId]);
    expect(inputsOf(firstRuntime).map((body) => body.input?.deliveryId)).toEqual([a.deliveryId]);
    expect(seqGapFree(all)).toBe(true);
  });

  it("claude A/B/C: B consumed with A, C stays queued", async () => {
    const agent = "claude-abc-b-consumed-c-queued";
    const a = await s.send.input(agent, "A");
    const b = await s.send.input(agent, "B");
    const c = await s.send.input(agent, "C");
    const all = await until(
      agent,
      (frame) => frame.type === "command_lifecycle" && frame.state === "completed",
      2,
    );
    expect(inputsOf(all).map((body) => body.input?.mode)).toEqual(["direct", "native_queue", "native_queue"]);
    const frames = inboundFrames(all);
    expect(frames.filter(isMainResult).map((frame) => frame.user_message_uuids)).toEqual([
      [a.deliveryId, b.deliveryId],
    ]);
    expect(lifecycle(frames, c.deliveryId)).toEqual(["queued"]);
  });

  it("claude without echoed ids recovers after an ambiguous boundary: A and B end unknown, C sent after both turns is answered by ordinal", async () => {
    const agent = "claude-echoless-recovers-after-ambiguity";
    const a = await s.send.input(agent, "First, without ids");
    const b = await s.send.input(agent, "Second, without ids");
    await until(agent, isMainResult, 2);
    const c = await s.send.input(agent, "Third, after both turns");
    const all = await until(agent, isMainResult, 3);
    const frames = inboundFrames(all);
    expect(frames.filter(isMainResult).map((frame) => [frame.result, "user_message_uuids" in frame])).toEqual(
      [
        ["FIRST_DONE", false],
        ["SECOND_DONE", false],
        ["THIRD_DONE", false],
      ],
    );
    expect(frames.some((frame) => frame.type === "command_lifecycle" || frame.isReplay === true)).toBe(false);
    expect(evidenceOf(all)).toEqual([
      ["input.delivered", a.deliveryId],
      ["input.delivered", b.deliveryId],
      ["evidence.missing", [a.deliveryId, b.deliveryId], "RESULT_EVIDENCE_MISSING"],
      ["input.delivered", c.deliveryId],
      ["input.consumed", c.deliveryId, "ordinal"],
      ["turn.completed", [[c.deliveryId, "ordinal"]], "completed", "THIRD_DONE"],
    ]);
    writtenOnce(agent, a.deliveryId, b.deliveryId, c.deliveryId);
  });

  it("claude permission prompt (control_request can_use_tool) is answered by the default deny policy, recorded, and the turn ends", async () => {
    const agent = "claude-permission-request";
    const a = await s.send.input(agent, "Run the tests");
    const all = await until(agent, isMainResult);
    const prompt = inboundFrames(all).find((frame) => frame.type === "control_request") as Frame;
    const answers = outbound(all).filter((body) => body.input === undefined);
    expect(answers.map((body) => JSON.parse(body.raw))).toEqual([
      {
        type: "control_response",
        response: {
          subtype: "success",
          request_id: prompt.request_id,
          response: { behavior: "deny", message: "Denied by the agent's approval policy." },
        },
      },
    ]);
    expect(evidenceOf(all).at(-1)).toEqual([
      "turn.completed",
      [[a.deliveryId, "native_exact"]],
      "completed",
      "DECISION: deny",
    ]);
  });

  it("codex command approval (server request) is answered decline by the default policy, recorded, and the turn ends", async () => {
    const agent = "codex-approval-request";
    const a = await s.send.input(agent, "Run the tests");
    const all = await until(agent, method("turn/completed"));
    const answers = outbound(all).filter((body) => {
      const frame = JSON.parse(body.raw) as Frame;
      return frame.method === undefined && frame.id === 0;
    });
    expect(answers.map((body) => JSON.parse(body.raw))).toEqual([{ id: 0, result: { decision: "decline" } }]);
    expect(evidenceOf(all).at(-1)).toMatchObject([
      "turn.completed",
      [[a.deliveryId, "native_exact"]],
      "completed",
      "DECISION: decline",
    ]);
  });

  it("claude stop while idle interrupts nothing: refused NOTHING_OWNED_TO_STOP, never written, after turns answered one by one", async () => {
    const agent = "claude-answer-each-input";
    const a = await s.send.input(agent, "one");
    await until(agent, isMainResult);
    const b = await s.send.input(agent, "two");
    await until(agent, isMainResult, 2);
    const stop = await s.send.stop(agent);
    const all = await records(agent, (entries) => entries.some((e) => e.record.type === "undeliverable"));
    expect(inputsOf(all).map((body) => [body.input?.deliveryId, body.input?.kind, body.input?.mode])).toEqual(
      [
        [a.deliveryId, "input", "direct"],
        [b.deliveryId, "input", "direct"],
      ],
    );
    expect(all.find((entry) => entry.record.type === "undeliverable")?.record).toEqual({
      type: "undeliverable",
      deliveryId: stop.deliveryId,
      deviceId: stop.deviceId,
      idempotencyKey: stop.idempotencyKey,
      reason: "NOTHING_OWNED_TO_STOP",
      code: "STOP_NOT_APPLICABLE",
    });
    writtenOnce(agent, a.deliveryId, b.deliveryId);
    expect(
      loggedInputs(agents.get(agent) as EngineSimAgent).some((line) => line.request_id !== undefined),
    ).toBe(false);
  });

  it("codex steer merged into the running turn: turn/steer with expectedTurnId, both userMessage items carry clientId", async () => {
    const agent = "codex-steer-merged";
    const a = await s.send.input(agent, "Start");
    const b = await s.send.input(agent, "Steer this way");
    const all = await until(agent, method("turn/completed"));
    const frames = inboundFrames(all);
    const turnId = (params(frames.find(method("turn/started")) as Frame).turn as Frame).id;
    const written = inputsOf(all).map((body) => JSON.parse(body.raw) as Frame);
    expect(written.map((frame) => [frame.method, params(frame).clientUserMessageId])).toEqual([
      ["turn/start", a.deliveryId],
      ["turn/steer", b.deliveryId],
    ]);
    expect(params(written[1] as Frame).expectedTurnId).toBe(turnId);
    expect(inputsOf(all).map((body) => body.input?.mode)).toEqual(["direct", "steering"]);
    const users = frames.filter(
      (frame) => method("item/completed")(frame) && item(frame).type === "userMessage",
    );
    expect(users.map((frame) => [item(frame).clientId, params(frame).turnId])).toEqual([
      [a.deliveryId, turnId],
      [b.deliveryId, turnId],
    ]);
    expect((params(frames.find(method("turn/completed")) as Frame).turn as Frame).status as string).toBe(
      "completed",
    );
    expect(
      outbound(all)
        .slice(0, 3)
        .map((body) => (JSON.parse(body.raw) as Frame).method),
    ).toEqual(["initialize", "initialized", "thread/start"]);
  });

  it("codex steer racing the end: 'no active turn' error, then the same input as a new turn/start", async () => {
    const agent = "codex-steer-races-end";
    const a = await s.send.input(agent, "First");
    await until(agent, (frame) => method("item/completed")(frame) && item(frame).type === "agentMessage");
    const b = await s.send.input(agent, "Late steer");
    const all = await until(agent, method("turn/completed"), 2);
    const written = inputsOf(all);
    expect(requestsOf(written)).toEqual([
      ["turn/start", a.deliveryId, "direct"],
      ["turn/steer", b.deliveryId, "steering"],
      ["turn/start", b.deliveryId, "direct"],
    ]);
    const steerId = (JSON.parse(written[1]?.raw ?? "{}") as Frame).id;
    const frames = inboundFrames(all);
    expect((frames.find((frame) => frame.id === steerId && frame.error) as Frame).error).toEqual({
      code: -32600,
      message: "no active turn to steer",
    });
    const turns = frames.filter(method("turn/completed")).map((frame) => (params(frame).turn as Frame).id);
    const users = frames.filter(
      (frame) => method("item/completed")(frame) && item(frame).type === "userMessage",
    );
    expect(users.map((frame) => [item(frame).clientId, params(frame).turnId])).toEqual([
      [a.deliveryId, turns[0]],
      [b.deliveryId, turns[1]],
    ]);
    writtenOnce(agent, a.deliveryId);
    expect(
      loggedInputs(agents.get(agent) as EngineSimAgent).filter((line) =>
        JSON.stringify(line).includes(b.deliveryId),
      ),
    ).toHaveLength(2);
  });

  it("codex interrupt with a late item: turn/interrupt names the running turn, an item completes after it, status interrupted", async () => {
    const agent = "codex-interrupt-late-item";
    await s.send.input(agent, "Run sleep 30");
    await until(agent, (frame) => method("item/started")(frame) && item(frame).type === "commandExecution");
    const stop = await s.send.stop(agent);
    const all = await until(agent, method("turn/completed"));
    const frames = inboundFrames(all);
    const turnId = (params(frames.find(method("turn/started")) as Frame).turn as Frame).id;
    const threadId = params(frames.find(method("turn/started")) as Frame).threadId;
    const interrupt = inputsOf(all).find((body) => body.input?.kind === "stop");
    const sent = JSON.parse(interrupt?.raw ?? "{}") as Frame;
    expect([sent.method, sent.params, interrupt?.input?.deliveryId]).toEqual([
      "turn/interrupt",
      { threadId, turnId },
      stop.deliveryId,
    ]);
    const answered = frames.findIndex((frame) => frame.id === sent.id && frame.method === undefined);
    const late = frames.findIndex(
      (frame) => method("item/completed")(frame) && item(frame).type === "agentMessage",
    );
    expect(answered).toBeGreaterThan(-1);
    expect(late).toBeGreaterThan(answered);
    expect((params(frames.find(method("turn/completed")) as Frame).turn as Frame).status).toBe("interrupted");
  });

  it("codex failed turn: turn/completed with status failed and its error", async () => {
    const agent = "codex-failed-turn";
    await s.send.input(agent, "Do it");
    const all = await until(agent, method("turn/completed"));
    const turn = params(inboundFrames(all).find(method("turn/completed")) as Frame).turn as Frame;
    expect(turn.status).toBe("failed");
    expect((turn.error as Frame).codexErrorInfo).toBe("responseStreamDisconnected");
  });

  it("codex turns answered one by one start a new turn each; a stop while idle interrupts nothing", async () => {
    const agent = "codex-answer-each-input";
    const a = await s.send.input(agent, "one");
    await until(agent, method("turn/completed"));
    const b = await s.send.input(agent, "two");
    await until(agent, method("turn/completed"), 2);
    const stop = await s.send.stop(agent);
    const all = await records(agent, (entries) => entries.some((e) => e.record.type === "undeliverable"));
    expect(requestsOf(inputsOf(all))).toEqual([
      ["turn/start", a.deliveryId, "direct"],
      ["turn/start", b.deliveryId, "direct"],
    ]);
    expect(all.find((entry) => entry.record.type === "undeliverable")?.record).toMatchObject({
      deliveryId: stop.deliveryId,
      reason: "NOTHING_OWNED_TO_STOP",
      code: "STOP_NOT_APPLICABLE",
    });
    expect(hasInbound(all, (frame) => item(frame)?.clientId === b.deliveryId)).toBe(true);
  });

  it("every scenario file is exercised by a test above", () => {
    expect(scenarioNames.sort()).toEqual([...agents.keys()].sort());
    expect(scenarioNames).toHaveLength(19);
  });
});
