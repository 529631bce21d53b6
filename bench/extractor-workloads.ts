import type { EngineKind } from "../libs/contract/engine.js";
import type { EngineRecord } from "../libs/contract/pipeline-payloads.js";

/**
 * Long synthetic sessions in the engines' real formats, generated lazily so the generator itself stays flat.
 * Claude stream-json: per turn one input line (uuid = deliveryId), lifecycle queued/started, init, stream events,
 * a sub-agent frame, the assistant reply with user_message_uuids and the result. Codex rollout: per turn a
 * hand-over, task_started, the user response_item with turn metadata, agent rows and task_complete.
 */
export interface Workload {
  name: string;
  engine: EngineKind;
  records: number;
  generate(agentId: string): Generator<EngineRecord>;
}

const START = Date.UTC(2026, 8, 24, 6, 0, 0);
const FILLER = "x".repeat(120);

function recordOf(
  agentId: string,
  engine: EngineKind,
  seq: number,
  record: EngineRecord["record"],
): EngineRecord {
  return {
    agentId,
    machineId: "bench-machine",
    engine,
    runtimeId: `${agentId}-rt`,
    seq,
    receivedAt: START + seq,
    record,
  };
}

const CLAUDE_PER_TURN = 12;

function* claudeStream(agentId: string, turns: number): Generator<EngineRecord> {
  let seq = 0;
  const out = (record: EngineRecord["record"]) => recordOf(agentId, "claude-stream-json", ++seq, record);
  const line = (frame: unknown): EngineRecord["record"] => ({ type: "inbound", raw: JSON.stringify(frame) });
  yield out({ type: "runtime_started", pid: 1 });
  for (let turn = 1; turn <= turns; turn += 1) {
    const id = `dlv-${turn}`;
    const text = `Turn ${turn}: paint plane ${turn} red.`;
    const raw = JSON.stringify({
      type: "user",
      message: { role: "user", content: text },
      parent_tool_use_id: null,
      uuid: id,
    });
    yield out({
      type: "outbound",
      raw,
      input: {
        deliveryId: id,
        deviceId: "lamp-bench",
        idempotencyKey: `key-${turn}`,
        kind: "input",
        text,
        mode: "direct",
      },
    });
    yield out(
      line({
        type: "command_lifecycle",
        command_uuid: id,
        state: "queued",
        uuid: `q-${turn}`,
        session_id: "s",
      }),
    );
    yield out(
      line({
        type: "command_lifecycle",
        command_uuid: id,
        state: "started",
        uuid: `s-${turn}`,
        session_id: "s",
      }),
    );
    yield out(
      line({ type: "system", subtype: "init", session_id: "s", uuid: `i-${turn}`, tools: ["Bash", "Read"] }),
    );
    for (let delta = 0; delta < 4; delta += 1)
      yield out(
        line({
          type: "stream_event",
          event: { type: "content_block_delta", delta: { type: "text_delta", text: FILLER } },
          parent_tool_use_id: null,
          session_id: "s",
        }),
      );
    yield out(
      line({
        type: "assistant",
        message: { id: `sub-${turn}`, content: [{ type: "text", text: FILLER }] },
        parent_tool_use_id: "toolu_1",
        session_id: "s",
      }),
    );
    yield out(
      line({
        type: "assistant",
        message: { id: `msg-${turn}`, content: [{ type: "text", text: `Plane ${turn} is red.` }] },
        parent_tool_use_id: null,
        user_message_uuids: [id],
        session_id: "s",
      }),
    );
    yield out(
      line({
        type: "result",
        subtype: "success",
        is_error: false,
        result: `Plane ${turn} is red.`,
        terminal_reason: "completed",
        user_message_uuid: id,
        user_message_uuids: [id],
        uuid: `r-${turn}`,
        session_id: "s",
      }),
    );
    yield out(
      line({
        type: "command_lifecycle",
        command_uuid: id,
        state: "completed",
        uuid: `c-${turn}`,
        session_id: "s",
      }),
    );
  }
}

const ROLLOUT_PER_TURN = 8;

function* codexRollout(agentId: string, turns: number): Generator<EngineRecord> {
  let seq = 0;
  const out = (record: EngineRecord["record"]) => recordOf(agentId, "codex-rollout", ++seq, record);
  const row = (second: number, type: string, payload: unknown): EngineRecord["record"] => ({
    type: "inbound",
    raw: JSON.stringify({ timestamp: new Date(START + second * 1000).toISOString(), type, payload }),
  });
  yield out({ type: "runtime_started" });
  for (let turn = 1; turn <= turns; turn += 1) {
    const turnId = `turn-${turn}`;
    const text = `Turn ${turn}: reply GARDEN_${turn}.`;
    const at = turn * 10;
    yield {
      ...out({
        type: "handed_over",
        deliveryId: `dlv-${turn}`,
        deviceId: "lamp-bench",
        idempotencyKey: `key-${turn}`,
        text,
        mode: "native_queue",
      }),
      receivedAt: START + at * 1000,
    };
    yield out(row(at + 1, "event_msg", { type: "task_started", turn_id: turnId }));
    yield out(
      row(at + 2, "response_item", {
        type: "message",
        id: `in-${turn}`,
        role: "user",
        content: [{ type: "input_text", text }],
        internal_chat_message_metadata_passthrough: { turn_id: turnId, content_item_kinds: ["user.text"] },
      }),
    );
    for (let reasoning = 0; reasoning < 3; reasoning += 1)
      yield out(
        row(at + 3, "response_item", {
          type: "reasoning",
          summary: [{ type: "summary_text", text: FILLER }],
        }),
      );
    yield out(
      row(at + 4, "response_item", {
        type: "message",
        role: "assistant",
        content: [{ type: "output_text", text: `GARDEN_${turn}` }],
      }),
    );
    yield out(
      row(at + 5, "event_msg", {
        type: "task_complete",
        turn_id: turnId,
        last_agent_message: `GARDEN_${turn}`,
      }),
    );
  }
}

export function claudeStreamWorkload(minRecords: number): Workload {
  const turns = Math.ceil(minRecords / CLAUDE_PER_TURN);
  return {
    name: "claude stream-json",
    engine: "claude-stream-json",
    records: 1 + turns * CLAUDE_PER_TURN,
    generate: (agentId) => claudeStream(agentId, turns),
  };
}

export function codexRolloutWorkload(minRecords: number): Workload {
  const turns = Math.ceil(minRecords / ROLLOUT_PER_TURN);
  return {
    name: "codex rollout",
    engine: "codex-rollout",
    records: 1 + turns * ROLLOUT_PER_TURN,
    generate: (agentId) => codexRollout(agentId, turns),
  };
}
