import { asFrame, parseFrame, strings, text, type Frame } from "../../../libs/contract/engine-frame.js";
import type { Outcome } from "../../../libs/contract/turn-result.js";
import { requestAnswered, requestOpened } from "../engine-requests.js";
import { threadAppId } from "../identity-binding.js";
import { completeTurn } from "../membership.js";
import {
  isMainInput,
  nextOrdinal,
  removeInputs,
  type OpenInput,
  type RuntimeState,
} from "../runtime-state.js";
import type { StepOutput } from "../step-output.js";

/**
 * Claude Code headless stream-json. Inputs carry our deliveryId as `uuid`; the CLI proves consumption by echoing it
 * (result.user_message_uuids > result.user_message_uuid > first main-loop reply's user_message_uuids >
 * command_lifecycle started > isReplay echo). The main-loop `result` without an origin is the only boundary.
 */
export interface ClaudeStreamState {
  kind: "claude-stream-json";
  /** The CLI has shown it echoes prompt uuids; from then on a boundary without ids owns no input. */
  echoSeen: boolean;
  /**
   * An ordinal boundary was ambiguous and the inputs it left open (already reported unknown) may still own a later
   * boundary: no boundary is attributed by ordinal until each of them has been accounted for by one.
   */
  ordinalBlocked: boolean;
  /** Proofs seen since the previous boundary, by strength. */
  turn: { replyIds: string[] | null; startedIds: string[]; replayIds: string[] };
  /** Our interrupt control_request ids -> the stop's deliveryId. */
  interrupts: Record<string, string>;
  sessionRef: string | null;
}

export function newClaudeStreamState(): ClaudeStreamState {
  return {
    kind: "claude-stream-json",
    echoSeen: false,
    ordinalBlocked: false,
    turn: { replyIds: null, startedIds: [], replayIds: [] },
    interrupts: {},
    sessionRef: null,
  };
}

/** Links what we wrote to the ids it carries: the prompt `uuid`, or the interrupt's `request_id`. */
export function claudeOutbound(
  state: RuntimeState,
  format: ClaudeStreamState,
  input: OpenInput | undefined,
  raw: string,
): void {
  const frame = parseFrame(raw);
  if (!frame) return;
  if (frame.type === "control_response")
    return requestAnswered(state, text(asFrame(frame.response)?.request_id));
  if (!input) return;
  if (input.kind === "input") {
    input.nativeRef = text(frame.uuid) ?? input.deliveryId;
    return;
  }
  const requestId = text(frame.request_id);
  if (requestId) format.interrupts[requestId] = input.deliveryId;
}

export function claudeInbound(
  state: RuntimeState,
  format: ClaudeStreamState,
  raw: string,
  step: StepOutput,
): void {
  const frame = parseFrame(raw);
  if (!frame) return step.ignore("unparseable_frame");
  INBOUND_BY_TYPE.get(frame.type)?.(state, format, frame, step);
}

type InboundFrame = (state: RuntimeState, format: ClaudeStreamState, frame: Frame, step: StepOutput) => void;

/** What each inbound frame type may prove; frames of any other type prove nothing. */
const INBOUND_BY_TYPE = new Map<unknown, InboundFrame>([
  ["system", bindSession],
  ["command_lifecycle", lifecycle],
  ["user", replayEcho],
  ["assistant", firstReply],
  ["control_response", interruptConfirmed],
  ["control_request", engineRequest],
  ["result", boundary],
]);

/** The CLI asks (a permission prompt): the runner answers it; until then the engine waits on it. */
function engineRequest(
  state: RuntimeState,
  _format: ClaudeStreamState,
  frame: Frame,
  step: StepOutput,
): void {
  const nativeId = text(frame.request_id);
  const method = text(asFrame(frame.request)?.subtype) ?? "unknown";
  if (nativeId) requestOpened(state, { nativeId, method }, step);
}

const isMainLoop = (frame: Frame) =>
  frame.parent_tool_use_id === null || frame.parent_tool_use_id === undefined;

function ours(state: RuntimeState, ids: readonly string[]): OpenInput[] {
  const found: OpenInput[] = [];
  for (const id of ids) {
    const input = state.inputs.find((candidate) => isMainInput(candidate) && candidate.nativeRef === id);
    if (input && !found.includes(input)) found.push(input);
  }
  return found;
}

function proveConsumed(state: RuntimeState, step: StepOutput, inputs: OpenInput[]): string[] {
  for (const input of inputs) step.consumed(state, input, "native_exact");
  return inputs.map((input) => input.nativeRef ?? input.deliveryId);
}

function bindSession(state: RuntimeState, format: ClaudeStreamState, frame: Frame, step: StepOutput): void {
  const sessionId = text(frame.session_id);
  if (frame.subtype !== "init" || !sessionId || sessionId === format.sessionRef) return;
  format.sessionRef = sessionId;
  step.bind(state, {
    appEntityKind: "provider_thread",
    appEntityId: threadAppId(state.agentId, state.engine, sessionId),
    nativeKind: "session",
    nativeRef: sessionId,
    correlation: "native_scoped",
  });
}

function lifecycle(state: RuntimeState, format: ClaudeStreamState, frame: Frame, step: StepOutput): void {
  format.echoSeen = true;
  const commandId = text(frame.command_uuid);
  if (!commandId) return;
  const inputs = ours(state, [commandId]);
  if (frame.state === "started") {
    format.turn.startedIds.push(...proveConsumed(state, step, inputs));
    return;
  }
  // A queued command cancelled before it started was never consumed: its receipt cannot complete.
  if (frame.state === "cancelled") {
    const notStarted = inputs.filter((input) => !input.consumed);
    step.missing(state, notStarted, "RESULT_EVIDENCE_MISSING");
    removeInputs(state, new Set(notStarted.map((input) => input.deliveryId)));
  }
}

function replayEcho(state: RuntimeState, format: ClaudeStreamState, frame: Frame, step: StepOutput): void {
  if (frame.isReplay !== true || !isMainLoop(frame)) return;
  format.echoSeen = true;
  const uuid = text(frame.uuid);
  if (uuid) format.turn.replayIds.push(...proveConsumed(state, step, ours(state, [uuid])));
}

function firstReply(state: RuntimeState, format: ClaudeStreamState, frame: Frame, step: StepOutput): void {
  if (!isMainLoop(frame)) return;
  const ids = strings(frame.user_message_uuids);
  if (!ids) return;
  format.echoSeen = true;
  if (format.turn.replyIds === null) format.turn.replyIds = proveConsumed(state, step, ours(state, ids));
}

function interruptConfirmed(
  state: RuntimeState,
  format: ClaudeStreamState,
  frame: Frame,
  step: StepOutput,
): void {
  const response = asFrame(frame.response);
  const requestId = text(response?.request_id);
  if (!response || !requestId || response.subtype !== "success") return;
  const deliveryId = format.interrupts[requestId];
  const stop = state.inputs.find((input) => input.deliveryId === deliveryId);
  delete format.interrupts[requestId];
  if (!stop) return;
  step.stopConfirmed(state, stop);
  removeInputs(state, new Set([stop.deliveryId]));
}

function boundary(state: RuntimeState, format: ClaudeStreamState, frame: Frame, step: StepOutput): void {
  if (!isMainLoop(frame)) return;
  const proof = strongestProof(format, frame);
  const turnProof = format.turn;
  format.turn = { replyIds: null, startedIds: [], replayIds: [] };
  const appTurnId = nextOrdinal(state, "turn");
  step.bind(state, {
    appEntityKind: "provider_turn",
    appEntityId: appTurnId,
    nativeKind: null,
    nativeRef: null,
    correlation: "ordinal",
  });
  // Background wakes and peer turns start by themselves: they own no input.
  if (text(asFrame(frame.origin)?.kind)) return;

  const native = proof ?? firstNonEmpty(turnProof);
  const members = native ? ours(state, native) : [];
  const outcome = outcomeOf(frame);
  const fullText = text(frame.result) ?? "";
  if (members.length > 0)
    completeTurn(state, step, {
      appTurnId,
      outcome,
      fullText,
      members: members.map((input) => ({ input, correlation: "native_exact", nativeRef: input.nativeRef })),
    });
  else if (!format.echoSeen) ordinalBoundary(state, format, step, { appTurnId, outcome, fullText });
  forgetSettledInterrupts(state, format);
}

/** An interrupt whose stop a completed turn settled is answered by nobody any more: its request id goes. */
function forgetSettledInterrupts(state: RuntimeState, format: ClaudeStreamState): void {
  const open = new Set(state.inputs.map((input) => input.deliveryId));
  for (const [requestId, deliveryId] of Object.entries(format.interrupts))
    if (!open.has(deliveryId)) delete format.interrupts[requestId];
}

/** Ids the result frame itself names; their presence also proves the CLI echoes. */
function strongestProof(format: ClaudeStreamState, frame: Frame): string[] | undefined {
  const many = strings(frame.user_message_uuids);
  const one = text(frame.user_message_uuid);
  if (many !== undefined || one !== undefined) format.echoSeen = true;
  if (many && many.length > 0) return many;
  return one ? [one] : undefined;
}

function firstNonEmpty(turn: ClaudeStreamState["turn"]): string[] | undefined {
  for (const ids of [turn.replyIds ?? [], turn.startedIds, turn.replayIds]) if (ids.length > 0) return ids;
  return undefined;
}

/**
 * A CLI that never echoed answers its inputs in order, one boundary per turn. The boundary owns the one outstanding
 * input when exactly one is open and no earlier ambiguity is pending. Otherwise it is ambiguous: every open input
 * ends unknown, and the boundary accounts for the oldest, which leaves the open set. The others stay open without
 * a claim until later boundaries account for them (a turn of their own may still come); once none is left, the
 * next single outstanding input is attributed by ordinal again. A boundary while such an input and a newer one are
 * open may be either's, so the newer one ends unknown too.
 */
function ordinalBoundary(
  state: RuntimeState,
  format: ClaudeStreamState,
  step: StepOutput,
  turn: { appTurnId: string; outcome: Outcome; fullText: string },
): void {
  const candidates = state.inputs.filter(isMainInput);
  const [oldest] = candidates;
  if (!oldest) return;
  if (candidates.length === 1 && !format.ordinalBlocked) {
    completeTurn(state, step, { ...turn, members: [{ input: oldest, correlation: "ordinal" }] });
    return;
  }
  step.missing(state, candidates, "RESULT_EVIDENCE_MISSING");
  removeInputs(state, new Set([oldest.deliveryId]));
  format.ordinalBlocked = candidates.length > 1;
}

function outcomeOf(frame: Frame): Outcome {
  if (frame.subtype === "success" && frame.is_error !== true) return "completed";
  if (text(frame.terminal_reason)?.startsWith("aborted_")) return "cancelled";
  return "failed";
}
