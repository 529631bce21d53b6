import { describe, expect, it } from "vitest";
import { engineRecordSchema, type EngineRecord } from "../../../libs/contract/pipeline-payloads.js";
import { TEST_LIMITS } from "../../../test/corpus-replay/redis-replay.js";
import { AgentEvidenceReplay } from "../agent-replay.js";

/**
 * Issue 17: Claude Code 2.1.332 writes a prompt typed mid-turn as a `queued_command` attachment without
 * `origin: {kind: "human"}` (which 2.1.263 had). Rows shaped as the real 2.1.332 CLI writes them (fields seen in its
 * transcript under test/real-engines), reduced to what the chain needs.
 */
const AT = 1_000_000;
const iso = (offset: number) => new Date(AT + offset).toISOString();
const SESSION = "3dc3267b-848c-49da-8722-899e542635b9";

function rows(queued: Record<string, unknown>): EngineRecord[] {
  const row = (uuid: string, parentUuid: string | null, offset: number, fields: Record<string, unknown>) =>
    JSON.stringify({
      parentUuid,
      isSidechain: false,
      uuid,
      sessionId: SESSION,
      timestamp: iso(offset),
      ...fields,
    });
  const bodies: EngineRecord["record"][] = [
    { type: "runtime_started" },
    {
      type: "handed_over",
      deliveryId: "dlv-a",
      deviceId: "lamp-1",
      idempotencyKey: "key-a",
      text: "Run the check.",
      mode: "native_input",
    },
    {
      type: "handed_over",
      deliveryId: "dlv-b",
      deviceId: "lamp-1",
      idempotencyKey: "key-b",
      text: "Also say FOLDED.",
      mode: "native_input",
    },
    ...[
      row("u1", null, 100, { type: "user", message: { role: "user", content: "Run the check." } }),
      row("u2", "u1", 200, {
        type: "assistant",
        message: {
          id: "m1",
          role: "assistant",
          content: [{ type: "tool_use", id: "t1", name: "Bash", input: {} }],
          stop_reason: "tool_use",
        },
      }),
      row("u3", "u2", 300, {
        type: "user",
        message: { role: "user", content: [{ type: "tool_result", tool_use_id: "t1", content: "" }] },
      }),
      row("u4", "u3", 400, {
        type: "attachment",
        attachment: { type: "queued_command", prompt: "Also say FOLDED.", commandMode: "prompt", ...queued },
      }),
      row("u5", "u4", 500, {
        type: "assistant",
        message: {
          id: "m2",
          role: "assistant",
          content: [{ type: "text", text: "MERGED" }],
          stop_reason: "end_turn",
        },
      }),
    ].map((raw): EngineRecord["record"] => ({ type: "inbound", raw })),
  ];
  return bodies.map((record, index) =>
    engineRecordSchema.parse({
      agentId: "agent-1",
      machineId: "m1",
      engine: "claude-transcript",
      runtimeId: "tail-rt",
      seq: index + 1,
      receivedAt: AT + (index < 3 ? index : 600 + index),
      record,
    }),
  );
}

function membersOf(queued: Record<string, unknown>): string[][] {
  const replay = new AgentEvidenceReplay(TEST_LIMITS);
  for (const record of rows(queued)) replay.apply(record);
  return replay.evidence.flatMap((entry) =>
    entry.kind === "turn.completed" ? [entry.members.map((member) => member.deliveryId)] : [],
  );
}

describe("Claude transcript: a prompt typed mid-turn (queued_command) joins the turn", () => {
  it("2.1.332 shape (no origin; source_uuid, delivery_id, rowSource, hostsOwnTurn): both inputs are members", () => {
    expect(
      membersOf({ source_uuid: "c7b720ad", delivery_id: "3fcd82e6", rowSource: "local", hostsOwnTurn: true }),
    ).toEqual([["dlv-a", "dlv-b"]]);
  });

  it("2.1.263 shape (origin human): both inputs are members", () => {
    expect(membersOf({ origin: { kind: "human" } })).toEqual([["dlv-a", "dlv-b"]]);
  });

  it("something the CLI queued itself (origin task-notification) is not a member", () => {
    expect(membersOf({ origin: { kind: "task-notification" } })).toEqual([["dlv-a"]]);
  });
});
