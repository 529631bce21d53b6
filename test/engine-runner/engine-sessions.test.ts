import { describe, expect, it } from "vitest";
import { ClaudeStreamJsonSession } from "../../services/engine-runner/protocols/claude-stream-json.js";
import { CodexAppServerSession } from "../../services/engine-runner/protocols/codex-app-server.js";
import type { DispatchInput, OutboundInput } from "../../services/engine-runner/protocols/engine-session.js";
import { TemplateScope } from "../../tools/engine-sim/scripted/template.js";

const input = (deliveryId: string, text = `text of ${deliveryId}`): DispatchInput => ({
  kind: "input",
  deliveryId,
  deviceId: "lamp-1",
  idempotencyKey: `key-${deliveryId}`,
  agentId: "agent-1",
  machineId: "m1",
  text,
  reservedAt: 1,
});
const line = (frame: unknown) => JSON.stringify(frame);
const hooksFor = (sent: { raw: string; input?: OutboundInput }[]) => ({
  transmit: async (raw: string, link?: OutboundInput) => {
    sent.push({ raw, ...(link ? { input: link } : {}) });
  },
  turnEnded: () => {},
  requestAnswered: () => {},
});

describe("Claude stream-json session: mode from the engine's own frames", () => {
  it("queues natively while any input is unanswered; listed uuids, lifecycle and old-CLI results answer them", async () => {
    const session = new ClaudeStreamJsonSession(hooksFor([]), "deny");
    expect((await session.inputFrame(input("A"))).mode).toBe("direct");
    expect((await session.inputFrame(input("B"))).mode).toBe("native_queue");
    session.observe(line({ type: "result", subtype: "success", origin: { kind: "task-notification" } }));
    session.observe(line({ type: "result", parent_tool_use_id: "toolu_1", subtype: "success" }));
    expect((await session.inputFrame(input("C"))).mode).toBe("native_queue");
    session.observe(line({ type: "result", subtype: "success", user_message_uuids: ["A", "B"] }));
    session.observe(line({ type: "command_lifecycle", command_uuid: "C", state: "cancelled" }));
    expect((await session.inputFrame(input("D"))).mode).toBe("direct");
    session.observe(line({ type: "result", subtype: "error_during_execution", is_error: true }));
    expect((await session.inputFrame(input("E"))).mode).toBe("direct");
  });

  it("writes the input and the interrupt exactly in the fixed convention", async () => {
    const session = new ClaudeStreamJsonSession(hooksFor([]), "deny");
    expect((await session.inputFrame(input("A", "hi"))).raw).toBe(
      '{"type":"user","message":{"role":"user","content":"hi"},"parent_tool_use_id":null,"uuid":"A"}',
    );
    expect(session.stopFrame({ ...input("S"), kind: "stop" }).raw).toBe(
      '{"type":"control_request","request_id":"S","request":{"subtype":"interrupt"}}',
    );
  });
});

describe("Codex app-server session", () => {
  async function started() {
    const sent: { raw: string; input?: OutboundInput }[] = [];
    const session = new CodexAppServerSession(hooksFor(sent), "deny");
    const ready = session.start();
    await Promise.resolve();
    session.observe(line({ id: 1, result: {} }));
    await new Promise((resolve) => setTimeout(resolve, 0));
    session.observe(line({ id: 2, result: { thread: { id: "T" } } }));
    await ready;
    return { session, sent };
  }

  it("opens with initialize (1), initialized, thread/start (2), then numbers requests upward", async () => {
    const { session, sent } = await started();
    expect(sent.map((frame) => JSON.parse(frame.raw).method)).toEqual([
      "initialize",
      "initialized",
      "thread/start",
    ]);
    expect(JSON.parse((await session.inputFrame(input("A", "go"))).raw)).toEqual({
      id: 3,
      method: "turn/start",
      params: { threadId: "T", input: [{ type: "text", text: "go" }], clientUserMessageId: "A" },
    });
  });

  it("steers into the running turn of its thread only; 'no active turn' falls back to turn/start", async () => {
    const { session, sent } = await started();
    const first = session.inputFrame(input("A"));
    await first;
    session.observe(line({ id: 3, result: { turn: { id: "turn-1", status: "inProgress" } } }));
    session.observe(line({ method: "turn/started", params: { threadId: "child", turn: { id: "turn-x" } } }));
    const steer = await session.inputFrame(input("B", "more"));
    expect([steer.mode, JSON.parse(steer.raw).params.expectedTurnId]).toEqual(["steering", "turn-1"]);
    session.observe(line({ method: "turn/completed", params: { threadId: "T", turn: { id: "turn-1" } } }));
    session.observe(line({ id: 4, error: { code: -32600, message: "no active turn to steer" } }));
    await new Promise((resolve) => setTimeout(resolve, 0));
    const fallback = sent.at(-1);
    expect(JSON.parse(fallback?.raw ?? "{}")).toEqual({
      id: 5,
      method: "turn/start",
      params: { threadId: "T", input: [{ type: "text", text: "more" }], clientUserMessageId: "B" },
    });
    expect(fallback?.input).toMatchObject({ deliveryId: "B", kind: "input", mode: "direct" });
    expect(JSON.parse(session.stopFrame({ ...input("S"), kind: "stop" }).raw).params).toEqual({
      threadId: "T",
      turnId: "turn-1",
    });
  });
});

describe("engine-sim scenario templates", () => {
  it("keeps raw values for whole placeholders, interpolates inside strings, mints ids per pass and per process", () => {
    const scope = new TemplateScope();
    scope.bind("A", { id: 7, clientId: null, text: "hello" });
    const first = scope.render({
      id: "{{A.id}}",
      c: "{{A.clientId}}",
      t: "say {{A.text}}",
      turn: "{{id:t}}",
      s: "{{session:s}}",
    }) as Record<string, unknown>;
    expect([first.id, first.c, first.t]).toEqual([7, null, "say hello"]);
    expect(scope.render("{{id:t}}")).toBe(first.turn);
    scope.nextPass();
    expect(scope.render("{{id:t}}")).not.toBe(first.turn);
    expect(scope.render("{{session:s}}")).toBe(first.s);
    expect(() => scope.render("{{B.uuid}}")).toThrow(/not bound/);
  });
});

describe("engine requests are answered by the agent's approval policy, never left open", () => {
  it("claude can_use_tool: allow echoes the tool input, deny says why; other subtypes get an error response", async () => {
    for (const [policy, verdict] of [
      ["allow", { behavior: "allow", updatedInput: { command: "ls" } }],
      ["deny", { behavior: "deny", message: "Denied by the agent's approval policy." }],
    ] as const) {
      const sent: { raw: string }[] = [];
      const answered: unknown[] = [];
      const session = new ClaudeStreamJsonSession(
        { ...hooksFor(sent), requestAnswered: (answer) => answered.push([answer.kind, answer.decision]) },
        policy,
      );
      session.observe(
        line({
          type: "control_request",
          request_id: "p1",
          request: { subtype: "can_use_tool", input: { command: "ls" } },
        }),
      );
      session.observe(
        line({ type: "control_request", request_id: "p2", request: { subtype: "hook_callback" } }),
      );
      await new Promise((resolve) => setImmediate(resolve));
      expect(sent.map((frame) => JSON.parse(frame.raw).response)).toEqual([
        { subtype: "success", request_id: "p1", response: verdict },
        { subtype: "error", request_id: "p2", error: "unsupported request hook_callback" },
      ]);
      expect(answered).toEqual([
        ["approval", policy],
        ["unsupported", "unanswerable"],
      ]);
    }
  });

  it("codex approvals answer accept/decline (legacy methods approved/denied); a question for the user gets an error", async () => {
    const sent: { raw: string }[] = [];
    const session = new CodexAppServerSession(hooksFor(sent), "allow");
    session.observe(line({ id: 7, method: "item/fileChange/requestApproval", params: {} }));
    session.observe(line({ id: 8, method: "execCommandApproval", params: {} }));
    session.observe(line({ id: 9, method: "item/tool/requestUserInput", params: {} }));
    await new Promise((resolve) => setImmediate(resolve));
    expect(sent.map((frame) => JSON.parse(frame.raw))).toEqual([
      { id: 7, result: { decision: "accept" } },
      { id: 8, result: { decision: "approved" } },
      { id: 9, error: { code: -32000, message: "no user can answer questions on this surface" } },
    ]);
  });
});
