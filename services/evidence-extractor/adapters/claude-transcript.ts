import { asFrame, list, text, type Frame } from "../../../libs/contract/engine-frame.js";
import { threadAppId, turnAppId } from "../identity-binding.js";
import { completeTurn, type ProvenMember } from "../membership.js";
import { nextOrdinal, type EvidenceLimits, type RuntimeState } from "../runtime-state.js";
import type { StepOutput } from "../step-output.js";
import { fingerprintCandidates, readTranscriptRow, type RowAdapter } from "./fingerprint.js";
import { contentText } from "./frame-fields.js";

/**
 * Claude Code interactive transcript JSONL (tail mode). The boundary is a main-chain assistant row with
 * `stop_reason: end_turn`; its members are the human root prompt and the typed `queued_command` attachments on
 * its parentUuid chain. Rows of a closed turn are dropped, so state does not grow with the transcript. The row's
 * `sessionId` is the provider thread; a turn's app id derives from it and the final message id.
 */
export interface ClaudeTranscriptState {
  kind: "claude-transcript";
  /** Main-chain rows of the open turn by uuid, in arrival order (oldest first is evicted past the cap). */
  rows: Record<string, ChainRow>;
  rowCount: number;
  /** Ancestry was evicted since the last boundary: a broken chain is then EVIDENCE_EVICTED. */
  evicted: boolean;
  highWaterMs: number;
  /** Text blocks of the latest assistant message (multi-row messages share message.id). */
  message: { id: string; texts: string[] } | null;
  /** Session id of the last row that named one (bound once per runtime as the provider thread). */
  sessionRef: string | null;
}

/** h = human root prompt, q = human queued_command attachment, o = any other link of the chain. */
interface ChainRow {
  p: string | null;
  k: "h" | "q" | "o";
  prompt?: string;
  seq: number;
  at: number;
}

export function newClaudeTranscriptState(): ClaudeTranscriptState {
  return {
    kind: "claude-transcript",
    rows: {},
    rowCount: 0,
    evicted: false,
    highWaterMs: 0,
    message: null,
    sessionRef: null,
  };
}

export const claudeTranscriptRow: RowAdapter<ClaudeTranscriptState> = (state, format, raw, context) => {
  const { seq, limits, step } = context;
  const row = readTranscriptRow(format, raw, step);
  if (!row) return;
  if (row.isSidechain === true) return;
  const providerThreadId = bindSession(state, format, text(row.sessionId), step);
  const kind = rowKind(row);
  if (!kind) return;
  const message = asFrame(row.message);
  if (row.type === "assistant" && message && row.isApiErrorMessage !== true) collectText(format, message);
  const uuid = text(row.uuid);
  const parent = text(row.parentUuid) ?? null;
  if (uuid)
    remember(format, uuid, { p: parent, k: kind.k, ...promptOf(kind), seq, at: format.highWaterMs }, limits);
  if (row.type === "assistant" && message?.stop_reason === "end_turn" && row.isApiErrorMessage !== true)
    endTurn(state, format, { parent, messageId: text(message.id), providerThreadId }, limits, step);
};

/** The session the row belongs to as a provider thread (bound on the runtime's first row naming it). */
function bindSession(
  state: RuntimeState,
  format: ClaudeTranscriptState,
  sessionId: string | undefined,
  step: StepOutput,
): string | null {
  if (!sessionId) return null;
  const appId = threadAppId(state.agentId, state.engine, sessionId);
  if (sessionId === format.sessionRef) return appId;
  format.sessionRef = sessionId;
  step.bind(state, {
    appEntityKind: "provider_thread",
    appEntityId: appId,
    nativeKind: "session",
    nativeRef: sessionId,
    correlation: "native_scoped",
  });
  return appId;
}

function promptOf(kind: { prompt?: string }): { prompt?: string } {
  return kind.prompt === undefined ? {} : { prompt: kind.prompt };
}

function rowKind(row: Frame): { k: ChainRow["k"]; prompt?: string } | undefined {
  if (row.type === "user") {
    const prompt = contentText(asFrame(row.message)?.content, ["text"]);
    const human = prompt !== undefined && row.isMeta !== true && row.isCompactSummary !== true;
    return human ? { k: "h", prompt } : { k: "o" };
  }
  if (row.type === "attachment") {
    const attachment = asFrame(row.attachment);
    const queued =
      attachment?.type === "queued_command" && typedByUser(attachment) && attachment.commandMode === "prompt";
    const prompt = queued ? contentText(attachment.prompt, ["text"]) : undefined;
    return prompt === undefined ? { k: "o" } : { k: "q", prompt };
  }
  return row.type === "assistant" || row.type === "system" ? { k: "o" } : undefined;
}

/**
 * A queued prompt the user typed. Claude Code 2.1.263 marks it `origin: {kind: "human"}`; 2.1.332 drops `origin` for
 * typed prompts (it carries `source_uuid`, `delivery_id`, `rowSource`, `hostsOwnTurn` instead) and keeps an origin
 * only for what the CLI queued itself (e.g. a task notification), which is never a member.
 */
function typedByUser(attachment: Frame): boolean {
  const origin = asFrame(attachment.origin);
  return origin === undefined ? attachment.origin === undefined : origin.kind === "human";
}

function collectText(format: ClaudeTranscriptState, message: Frame): void {
  const id = text(message.id) ?? "";
  if (format.message?.id !== id) format.message = { id, texts: [] };
  for (const block of list(message.content) ?? []) {
    const part = asFrame(block);
    const said = part?.type === "text" ? text(part.text) : undefined;
    if (said !== undefined) format.message.texts.push(said);
  }
}

function remember(format: ClaudeTranscriptState, uuid: string, row: ChainRow, limits: EvidenceLimits): void {
  if (!(uuid in format.rows)) format.rowCount += 1;
  format.rows[uuid] = row;
  if (format.rowCount <= limits.maxChainRows) return;
  for (const oldest in format.rows) {
    delete format.rows[oldest];
    break;
  }
  format.rowCount -= 1;
  format.evicted = true;
}

/** Walks from the final answer up to the human root; `broken` when the chain ends before reaching one. */
function chainToRoot(
  format: ClaudeTranscriptState,
  from: string | null,
): { prompts: ChainRow[]; broken: boolean } {
  const prompts: ChainRow[] = [];
  let cursor = from;
  for (let steps = 0; steps <= format.rowCount; steps += 1) {
    const row = cursor === null ? undefined : format.rows[cursor];
    if (!row) break;
    if (row.k !== "o") prompts.push(row);
    if (row.k === "h") return { prompts: prompts.reverse(), broken: false };
    cursor = row.p;
  }
  return { prompts: prompts.reverse(), broken: true };
}

/** The `end_turn` row: its parent, its message id and the provider thread it is in. */
interface FinalRow {
  parent: string | null;
  messageId: string | undefined;
  providerThreadId: string | null;
}

function endTurn(
  state: RuntimeState,
  format: ClaudeTranscriptState,
  { parent, messageId, providerThreadId }: FinalRow,
  limits: EvidenceLimits,
  step: StepOutput,
): void {
  const chain = chainToRoot(format, parent);
  const fullText = format.message?.texts.join("\n") ?? "";
  const evicted = format.evicted;
  format.rows = {};
  format.rowCount = 0;
  format.evicted = false;
  format.message = null;
  const appTurnId = messageId
    ? turnAppId(state.agentId, state.engine, providerThreadId, messageId)
    : nextOrdinal(state, "turn");
  step.bind(state, {
    appEntityKind: "provider_turn",
    appEntityId: appTurnId,
    nativeKind: messageId ? "message" : null,
    nativeRef: messageId ?? null,
    providerThreadId,
    correlation: messageId ? "native_scoped" : "ordinal",
  });
  // Missing or evicted ancestry: no result; the prompts we did see on the chain become unknown, never guessed.
  if (chain.broken) {
    step.ignore(evicted ? "chain_evicted" : "chain_broken");
    const seen = chain.prompts.flatMap((row) => fingerprintCandidates(state, row.prompt ?? "", row, limits));
    step.missing(state, seen, evicted ? "EVIDENCE_EVICTED" : "RESULT_EVIDENCE_MISSING");
    return;
  }
  const members: ProvenMember[] = [];
  for (const row of chain.prompts) {
    const candidates = fingerprintCandidates(state, row.prompt ?? "", row, limits);
    if (candidates.length > 1) step.missing(state, candidates, "RESULT_EVIDENCE_MISSING");
    const [only] = candidates;
    if (candidates.length === 1 && only && !members.some((member) => member.input === only))
      members.push({ input: only, correlation: "fingerprint" });
  }
  if (members.length === 0) return;
  completeTurn(state, step, {
    appTurnId,
    providerThreadId,
    ...(messageId ? { engineTurnId: messageId } : {}),
    outcome: "completed",
    fullText,
    members,
  });
}
