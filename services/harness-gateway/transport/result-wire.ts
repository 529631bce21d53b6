import {
  correlatedSummaryPayloadSchema,
  turnResultPayloadSchema,
  type TurnResultPayload,
} from "../../../libs/contract/turn-result.js";
import type { StoredResult } from "../../../libs/harness-store/stored-records.js";

/** The wire form of a result on one connection, chosen at send time from its negotiated capabilities. */
export type ResultForm = "turn.result" | "turn.summary.correlated" | "turn.summary.plain";
export type LegacySummaryProfile = "plain" | "correlated";

export function resultFormFor(v2Negotiated: boolean, legacyProfile: LegacySummaryProfile): ResultForm {
  if (v2Negotiated) return "turn.result";
  return legacyProfile === "correlated" ? "turn.summary.correlated" : "turn.summary.plain";
}

export interface EventEnvelope {
  eventId: number;
  serverInstanceId: string;
}

const SUMMARY_TEXT_LIMIT = 250;

/** The legacy one-line `text`: whitespace collapsed, at most 250 characters. */
export function summaryLine(fullText: string): string {
  const line = fullText.replace(/\s+/g, " ").trim();
  const chars = [...line];
  return chars.length <= SUMMARY_TEXT_LIMIT ? line : `${chars.slice(0, SUMMARY_TEXT_LIMIT - 1).join("")}…`;
}

function header(envelope: EventEnvelope, result: StoredResult, kind: string): string {
  const head = {
    type: "event",
    eventId: envelope.eventId,
    serverInstanceId: envelope.serverInstanceId,
    machineId: result.machineId,
    agentId: result.agentId,
    kind,
  };
  return JSON.stringify(head).slice(0, -1);
}

/**
 * Renders a stored result as one event frame, or undefined when this form must not carry it. `turn.result`
 * splices the stored payload bytes in unchanged; the summaries add the legacy fields to the same payload.
 */
export function renderResultEvent(
  form: ResultForm,
  result: StoredResult,
  envelope: EventEnvelope,
): string | undefined {
  if (form === "turn.result")
    return `${header(envelope, result, "turn.result")},"payload":${result.payload}}`;
  const payload: TurnResultPayload = turnResultPayloadSchema.parse(JSON.parse(result.payload));
  const single =
    result.scope === "input" ? { idempotencyKey: result.singleKey, turnId: result.singleTurnId || null } : {};
  if (form === "turn.summary.correlated") {
    const summary = correlatedSummaryPayloadSchema.parse({
      ...payload,
      kind: "summary",
      text: summaryLine(payload.fullText),
      ...single,
    });
    return `${header(envelope, result, "turn.summary")},"payload":${JSON.stringify(summary)}}`;
  }
  // A plain legacy peer cannot read membership or outcome: only a proven single input that completed.
  if (result.scope !== "input" || payload.outcome !== "completed") return undefined;
  const plain = {
    kind: "summary",
    text: summaryLine(payload.fullText),
    fullText: payload.fullText,
    ...single,
  };
  return `${header(envelope, result, "turn.summary")},"payload":${JSON.stringify(plain)}}`;
}
