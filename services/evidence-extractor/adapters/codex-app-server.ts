import { asFrame, list, parseFrame, strings, text, type Frame } from "../../../libs/contract/engine-frame.js";
import type { Outcome } from "../../../libs/contract/turn-result.js";
import { requestAnswered, requestOpened } from "../engine-requests.js";
import { derivedAppId, threadAppId, turnAppId } from "../identity-binding.js";
import { completeTurn } from "../membership.js";
import type { EvidenceLimits, OpenInput, RuntimeState } from "../runtime-state.js";
import type { StepOutput } from "../step-output.js";
import { contentText } from "./frame-fields.js";

/**
 * Codex app-server JSON-RPC. Each outbound request id is bound to its input; the turn/start response binds the
 * input to the turn it created (consumed, native_scoped); a turn/steer response only binds it, and consumption
 * needs the userMessage item in that turn (clientId = our deliveryId => native_exact; no clientId => same text
 * among the inputs bound to that turn => native_scoped). Only turn/completed of a thread we opened is a boundary.
 * App ids derive from native ids (thread id; thread + turn id; turn + item id), so a resumed thread keeps them.
 */
export interface CodexAppServerState {
  kind: "codex-app-server";
  /** Requests whose response matters, by JSON-RPC id. */
  requests: Record<string, { method: string; threadId?: string; deliveryId?: string }>;
  /** Threads opened by our thread/start|resume|fork: native id -> app id. Other threads are sub-agents. */
  rootThreads: Record<string, string>;
  childThreads: Record<string, string>;
  /**
   * Sub-agent thread (native id) -> app id of the turn node whose spawnAgent / resumeAgent / sendInput (or v2
   * subAgentActivity) started it: the parentNodeId of that thread's next turns. Oldest dropped past the cap.
   */
  parents: Record<string, string>;
  /** Open turns by native turn id. */
  turns: Record<string, CodexTurn>;
  activeRootTurn: string | null;
}

interface CodexTurn {
  appId: string;
  threadId: string;
  root: boolean;
  finalText: string | null;
  lastText: string | null;
}

const TRACKED_METHODS = new Set([
  "thread/start",
  "thread/resume",
  "thread/fork",
  "turn/start",
  "turn/steer",
  "turn/interrupt",
]);

const OUTCOMES: Record<string, Outcome> = {
  completed: "completed",
  interrupted: "cancelled",
  failed: "failed",
};

export function newCodexAppServerState(): CodexAppServerState {
  return {
    kind: "codex-app-server",
    requests: {},
    rootThreads: {},
    childThreads: {},
    parents: {},
    turns: {},
    activeRootTurn: null,
  };
}

export function codexOutbound(
  state: RuntimeState,
  format: CodexAppServerState,
  raw: string,
  input: OpenInput | undefined,
  limits: EvidenceLimits,
  step: StepOutput,
): void {
  const frame = parseFrame(raw);
  const method = text(frame?.method);
  const id = requestKey(frame?.id);
  if (!method && id !== undefined) return requestAnswered(state, id);
  if (!method || id === undefined || !TRACKED_METHODS.has(method)) return;
  const threadId = text(asFrame(frame?.params)?.threadId);
  format.requests[id] = {
    method,
    ...(threadId ? { threadId } : {}),
    ...(input ? { deliveryId: input.deliveryId } : {}),
  };
  const ids = Object.keys(format.requests);
  // A request that is never answered must not pile up; dropping it only loses a binding, which fails closed.
  if (ids.length > limits.maxOpenTurns) {
    delete format.requests[ids[0] as string];
    step.ignore("request_evicted");
  }
}

export function codexInbound(
  state: RuntimeState,
  format: CodexAppServerState,
  raw: string,
  limits: EvidenceLimits,
  step: StepOutput,
): void {
  const frame = parseFrame(raw);
  if (!frame) return step.ignore("unparseable_frame");
  const method = text(frame.method);
  if (method === undefined) return response(state, format, frame, limits, step);
  const serverRequestId = requestKey(frame.id);
  if (serverRequestId !== undefined) return requestOpened(state, { nativeId: serverRequestId, method }, step);
  const params = asFrame(frame.params);
  if (!params) return;
  switch (method) {
    case "turn/started":
      return turnStarted(state, format, params, limits, step);
    case "item/started":
      return itemStarted(state, format, params, limits, step);
    case "item/completed":
      return itemCompleted(state, format, params, limits, step);
    case "turn/completed":
      return turnCompleted(state, format, params, step);
    default:
      return;
  }
}

function requestKey(id: unknown): string | undefined {
  return typeof id === "number" || typeof id === "string" ? String(id) : undefined;
}

function response(
  state: RuntimeState,
  format: CodexAppServerState,
  frame: Frame,
  limits: EvidenceLimits,
  step: StepOutput,
): void {
  const id = requestKey(frame.id);
  const request = id === undefined ? undefined : format.requests[id];
  if (!request || id === undefined) return;
  delete format.requests[id];
  const input = state.inputs.find((candidate) => candidate.deliveryId === request.deliveryId);
  const result = asFrame(frame.result);
  // Errors bind nothing: a steer refused with "no active turn" was not consumed (the runner falls back to
  // turn/start with a new record); any other refusal leaves the input open until the runtime ends.
  if (!result) return;
  switch (request.method) {
    case "thread/start":
    case "thread/resume":
    case "thread/fork":
      return rootThreadOpened(state, format, text(asFrame(result.thread)?.id), step);
    case "turn/start":
      return turnBound(
        state,
        format,
        input,
        request.threadId,
        text(asFrame(result.turn)?.id),
        true,
        limits,
        step,
      );
    case "turn/steer":
      return turnBound(state, format, input, request.threadId, text(result.turnId), false, limits, step);
    case "turn/interrupt":
      if (input?.kind === "stop") {
        step.stopConfirmed(state, input);
        state.inputs = state.inputs.filter((candidate) => candidate !== input);
      }
      return;
  }
}

function rootThreadOpened(
  state: RuntimeState,
  format: CodexAppServerState,
  threadId: string | undefined,
  step: StepOutput,
): void {
  if (!threadId || format.rootThreads[threadId]) return;
  format.rootThreads[threadId] = bindThread(state, threadId, null, step);
}

/** Binds a native thread to its app thread id (under its parent node for a sub-agent's) and returns that id. */
function bindThread(
  state: RuntimeState,
  threadId: string,
  parentNodeId: string | null,
  step: StepOutput,
): string {
  const appId = threadAppId(state.agentId, state.engine, threadId);
  step.bind(state, {
    appEntityKind: "provider_thread",
    appEntityId: appId,
    nativeKind: "thread",
    nativeRef: threadId,
    parentNodeId,
    correlation: "native_scoped",
  });
  return appId;
}

function turnBound(
  state: RuntimeState,
  format: CodexAppServerState,
  input: OpenInput | undefined,
  threadId: string | undefined,
  turnId: string | undefined,
  created: boolean,
  limits: EvidenceLimits,
  step: StepOutput,
): void {
  if (!input || !turnId || !threadId) return;
  const turn = ensureTurn(state, format, threadId, turnId, limits, step);
  if (!turn.root) return;
  input.turnRef = turnId;
  // turn/start created the turn from this very input; a steer is only accepted into the turn's pending input.
  if (created) step.consumed(state, input, "native_scoped", turnId);
}

/**
 * First sight of a turn binds it: under our thread it is a provider turn, elsewhere a sub-agent node under the node
 * that started its thread (the active root turn when the engine named none).
 */
function ensureTurn(
  state: RuntimeState,
  format: CodexAppServerState,
  threadId: string,
  turnId: string,
  limits: EvidenceLimits,
  step: StepOutput,
): CodexTurn {
  const known = format.turns[turnId];
  if (known) return known;
  const rootThread = format.rootThreads[threadId];
  const parentNodeId = rootThread
    ? null
    : (format.parents[threadId] ?? format.turns[format.activeRootTurn ?? ""]?.appId ?? null);
  const providerThreadId = rootThread ?? childThread(state, format, threadId, parentNodeId, step);
  const turn: CodexTurn = {
    appId: rootThread
      ? turnAppId(state.agentId, state.engine, rootThread, turnId)
      : derivedAppId("node", [providerThreadId, turnId]),
    threadId,
    root: rootThread !== undefined,
    finalText: null,
    lastText: null,
  };
  step.bind(state, {
    appEntityKind: rootThread ? "provider_turn" : "node",
    appEntityId: turn.appId,
    nativeKind: "turn",
    nativeRef: turnId,
    parentNodeId,
    providerThreadId,
    correlation: "native_scoped",
  });
  format.turns[turnId] = turn;
  evictTurns(state, format, limits, step);
  return turn;
}

function childThread(
  state: RuntimeState,
  format: CodexAppServerState,
  threadId: string,
  parentNodeId: string | null,
  step: StepOutput,
): string {
  const known = format.childThreads[threadId];
  if (known) return known;
  const appId = bindThread(state, threadId, parentNodeId, step);
  format.childThreads[threadId] = appId;
  return appId;
}

/** Turns that never complete must not pile up: the oldest one's bound inputs fail closed. */
function evictTurns(
  state: RuntimeState,
  format: CodexAppServerState,
  limits: EvidenceLimits,
  step: StepOutput,
): void {
  const ids = Object.keys(format.turns);
  if (ids.length <= limits.maxOpenTurns) return;
  const evicted = ids[0] as string;
  delete format.turns[evicted];
  if (format.activeRootTurn === evicted) format.activeRootTurn = null;
  const bound = state.inputs.filter((input) => input.turnRef === evicted);
  step.missing(state, bound, "EVIDENCE_EVICTED");
  state.inputs = state.inputs.filter((input) => input.turnRef !== evicted);
}

/** A notification that may open a turn: its params, under the runtime's limits. */
type TurnNotification = (
  state: RuntimeState,
  format: CodexAppServerState,
  params: Frame,
  limits: EvidenceLimits,
  step: StepOutput,
) => void;

const turnStarted: TurnNotification = (state, format, params, limits, step) => {
  const threadId = text(params.threadId);
  const turnId = text(asFrame(params.turn)?.id);
  if (!threadId || !turnId) return;
  const turn = ensureTurn(state, format, threadId, turnId, limits, step);
  if (turn.root) format.activeRootTurn = turnId;
};

/** An item's first sight binds it under its turn; a sub-agent spawn or hand-off also links the child thread. */
const itemStarted: TurnNotification = (state, format, params, limits, step) => {
  const item = asFrame(params.item);
  const threadId = text(params.threadId);
  const turnId = text(params.turnId);
  const itemId = text(item?.id);
  if (!item || !threadId || !turnId || !itemId) return;
  const turn = ensureTurn(state, format, threadId, turnId, limits, step);
  step.bind(state, {
    appEntityKind: "item",
    appEntityId: derivedAppId("item", [turn.appId, itemId]),
    nativeKind: text(item.type) ?? null,
    nativeRef: itemId,
    providerThreadId: threadAppIdOf(format, threadId),
    providerTurnId: turn.appId,
    correlation: "native_scoped",
  });
  linkSubAgents(format, item, turn, limits, step);
};

const itemCompleted: TurnNotification = (state, format, params, limits, step) => {
  const item = asFrame(params.item);
  const threadId = text(params.threadId);
  const turnId = text(params.turnId);
  if (!item || !threadId || !turnId) return;
  const turn = ensureTurn(state, format, threadId, turnId, limits, step);
  linkSubAgents(format, item, turn, limits, step);
  if (item.type === "agentMessage") {
    const said = text(item.text) ?? "";
    turn.lastText = said;
    if (item.phase === "final_answer") turn.finalText = said;
    return;
  }
  if (item.type === "userMessage" && turn.root) userMessageShown(state, item, turnId, step);
};

function threadAppIdOf(format: CodexAppServerState, threadId: string): string | null {
  return format.rootThreads[threadId] ?? format.childThreads[threadId] ?? null;
}

/** Collab tool calls that make a sub-agent thread run a turn; `wait` only watches it. */
const STARTS_CHILD_TURN = new Set(["spawnAgent", "resumeAgent", "sendInput"]);

/** Sub-agent threads this item names as started by its turn (v1 collabAgentToolCall, v2 subAgentActivity). */
function startedThreads(item: Frame): string[] {
  if (item.type === "collabAgentToolCall" && STARTS_CHILD_TURN.has(text(item.tool) ?? ""))
    return strings(item.receiverThreadIds) ?? [];
  const agentThreadId = text(item.agentThreadId);
  return item.type === "subAgentActivity" && item.kind === "started" && agentThreadId ? [agentThreadId] : [];
}

function linkSubAgents(
  format: CodexAppServerState,
  item: Frame,
  turn: CodexTurn,
  limits: EvidenceLimits,
  step: StepOutput,
): void {
  for (const child of startedThreads(item)) {
    delete format.parents[child];
    format.parents[child] = turn.appId;
  }
  // A dropped link only loses the precise parent: the child's next turn falls back to the active root turn.
  const children = Object.keys(format.parents);
  for (const oldest of children.slice(0, Math.max(0, children.length - limits.maxOpenTurns))) {
    delete format.parents[oldest];
    step.ignore("subagent_link_evicted");
  }
}

/** The userMessage item is the engine's own statement that an input entered this turn. */
function userMessageShown(state: RuntimeState, item: Frame, turnId: string, step: StepOutput): void {
  const clientId = text(item.clientId);
  const itemRef = text(item.id);
  if (clientId) {
    const input = state.inputs.find(
      (candidate) => candidate.kind === "input" && candidate.deliveryId === clientId,
    );
    if (!input) return;
    input.turnRef = turnId;
    if (itemRef) input.itemRef = itemRef;
    step.consumed(state, input, "native_exact", turnId);
    return;
  }
  const said = contentText(item.content, ["text"]);
  const input = state.inputs.find(
    (candidate) =>
      candidate.kind === "input" &&
      candidate.turnRef === turnId &&
      !candidate.itemRef &&
      candidate.text === said,
  );
  if (!input) return;
  if (itemRef) input.itemRef = itemRef;
  step.consumed(state, input, "native_scoped", turnId);
}

function turnCompleted(
  state: RuntimeState,
  format: CodexAppServerState,
  params: Frame,
  step: StepOutput,
): void {
  const turnFrame = asFrame(params.turn);
  const turnId = text(turnFrame?.id);
  const outcome = OUTCOMES[text(turnFrame?.status) ?? ""];
  const turn = turnId ? format.turns[turnId] : undefined;
  if (!turnFrame || !turnId || !outcome || !turn) return;
  delete format.turns[turnId];
  if (format.activeRootTurn === turnId) format.activeRootTurn = null;
  // Sub-agent turns live under their parent node and never close the root turn.
  if (!turn.root) return;
  const bound = state.inputs.filter((input) => input.turnRef === turnId);
  // A steer acknowledged but never shown in the turn was not consumed by it: it stays open, unbound.
  for (const input of bound) if (!input.consumed) delete input.turnRef;
  const members = bound.filter((input) => input.consumed);
  if (members.length === 0) return;
  completeTurn(state, step, {
    appTurnId: turn.appId,
    engineTurnId: turnId,
    providerThreadId: format.rootThreads[turn.threadId] ?? null,
    outcome,
    fullText: finalText(turnFrame, turn),
    members: members.map((input) => ({
      input,
      correlation: input.consumed ?? "native_scoped",
      ...(input.itemRef ? { nativeRef: input.itemRef } : {}),
    })),
  });
}

/** The turn's final answer: from turn/completed items when it carries them, else from the streamed items. */
function finalText(turnFrame: Frame, turn: CodexTurn): string {
  const messages = (list(turnFrame.items) ?? []).map(asFrame).filter((item) => item?.type === "agentMessage");
  const final = messages.filter((item) => item?.phase === "final_answer").at(-1) ?? messages.at(-1);
  const carried = text(final?.text);
  if (carried !== undefined) return carried;
  return turn.finalText ?? turn.lastText ?? "";
}
