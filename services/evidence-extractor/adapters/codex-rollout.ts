import { asFrame, strings, text, type Frame } from "../../../libs/contract/engine-frame.js";
import { turnAppId } from "../identity-binding.js";
import { completeTurn, type ProvenMember } from "../membership.js";
import type { EvidenceLimits, RuntimeState } from "../runtime-state.js";
import type { StepOutput } from "../step-output.js";
import { fingerprintCandidates, readTranscriptRow, type RowAdapter } from "./fingerprint.js";
import { contentText } from "./frame-fields.js";

/**
 * Codex rollout JSONL (tail mode). A user `response_item` message whose passthrough metadata has a `turn_id` and the
 * `user.text` content kind is consumed by that turn (the engine's own structure is the proof; the fingerprint only
 * says which handed-over input it is). `task_complete` closes the turn; `turn_aborted` makes its members unknown.
 */
export interface CodexRolloutState {
  kind: "codex-rollout";
  /** Open turns by native turn_id: app id and the inputs proven consumed into it. */
  turns: Record<string, { appId: string; members: { deliveryId: string; itemRef: string | null }[] }>;
  highWaterMs: number;
}

export function newCodexRolloutState(): CodexRolloutState {
  return { kind: "codex-rollout", turns: {}, highWaterMs: 0 };
}

export const codexRolloutRow: RowAdapter<CodexRolloutState> = (state, format, raw, context) => {
  const { seq, limits, step } = context;
  const row = readTranscriptRow(format, raw, step);
  if (!row) return;
  const payload = asFrame(row.payload);
  if (!payload) return;
  if (row.type === "response_item" && payload.type === "message" && payload.role === "user")
    return userMessage(state, format, payload, { seq, at: format.highWaterMs }, limits, step);
  if (row.type !== "event_msg") return;
  if (payload.type === "task_complete") return taskComplete(state, format, payload, step);
  if (payload.type === "turn_aborted") return turnAborted(state, format, payload, step);
};

function userMessage(
  state: RuntimeState,
  format: CodexRolloutState,
  payload: Frame,
  row: { seq: number; at: number },
  limits: EvidenceLimits,
  step: StepOutput,
): void {
  const metadata = asFrame(payload.internal_chat_message_metadata_passthrough);
  const turnId = text(metadata?.turn_id);
  // Without per-input turn metadata nothing ties the row to a turn: no result for it.
  if (!turnId || !strings(metadata?.content_item_kinds)?.includes("user.text")) return;
  const prompt = contentText(payload.content, ["input_text"]);
  if (prompt === undefined) return;
  const candidates = fingerprintCandidates(state, prompt, row, limits);
  if (candidates.length > 1) return step.missing(state, candidates, "RESULT_EVIDENCE_MISSING");
  const [input] = candidates;
  if (!input) return;
  const turn = ensureTurn(state, format, turnId, limits, step);
  input.turnRef = turnId;
  turn.members.push({ deliveryId: input.deliveryId, itemRef: text(payload.id) ?? null });
  step.consumed(state, input, "fingerprint", turnId);
}

function ensureTurn(
  state: RuntimeState,
  format: CodexRolloutState,
  turnId: string,
  limits: EvidenceLimits,
  step: StepOutput,
): CodexRolloutState["turns"][string] {
  const known = format.turns[turnId];
  if (known) return known;
  // A tail may start after the session_meta row, so the turn is scoped by the agent's provider, not its thread:
  // Codex turn ids are UUIDv7, unambiguous there, and every runtime tailing the session derives the same app id.
  const turn = { appId: turnAppId(state.agentId, state.engine, null, turnId), members: [] };
  format.turns[turnId] = turn;
  step.bind(state, {
    appEntityKind: "provider_turn",
    appEntityId: turn.appId,
    nativeKind: "turn",
    nativeRef: turnId,
    correlation: "native_scoped",
  });
  const open = Object.keys(format.turns);
  if (open.length > limits.maxOpenTurns)
    closeTurn(state, format, open[0] as string, step, "EVIDENCE_EVICTED");
  return turn;
}

function taskComplete(
  state: RuntimeState,
  format: CodexRolloutState,
  payload: Frame,
  step: StepOutput,
): void {
  const turnId = text(payload.turn_id);
  const turn = turnId ? format.turns[turnId] : undefined;
  if (!turnId || !turn) return;
  delete format.turns[turnId];
  const members: ProvenMember[] = [];
  for (const member of turn.members) {
    const input = state.inputs.find((candidate) => candidate.deliveryId === member.deliveryId);
    if (input)
      members.push({
        input,
        correlation: "fingerprint",
        ...(member.itemRef ? { nativeRef: member.itemRef } : {}),
      });
  }
  if (members.length === 0) return;
  completeTurn(state, step, {
    appTurnId: turn.appId,
    engineTurnId: turnId,
    outcome: "completed",
    fullText: text(payload.last_agent_message) ?? "",
    members,
  });
}

/** An aborted turn has no answer: its members end unknown (never completed, never guessed). */
function turnAborted(state: RuntimeState, format: CodexRolloutState, payload: Frame, step: StepOutput): void {
  const turnId = text(payload.turn_id);
  const aborted = turnId ? [turnId] : Object.keys(format.turns);
  for (const id of aborted) closeTurn(state, format, id, step, "RESULT_EVIDENCE_MISSING");
}

function closeTurn(
  state: RuntimeState,
  format: CodexRolloutState,
  turnId: string,
  step: StepOutput,
  reason: "RESULT_EVIDENCE_MISSING" | "EVIDENCE_EVICTED",
): void {
  const turn = format.turns[turnId];
  if (!turn) return;
  delete format.turns[turnId];
  const ids = new Set(turn.members.map((member) => member.deliveryId));
  step.missing(
    state,
    state.inputs.filter((input) => ids.has(input.deliveryId)),
    reason,
  );
  state.inputs = state.inputs.filter((input) => !ids.has(input.deliveryId));
}
