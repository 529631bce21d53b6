import { sha256Hex } from "../../../libs/contract/canonical-json.js";
import { parseFrame, type Frame } from "../../../libs/contract/engine-frame.js";
import type { EvidenceLimits, OpenInput, RuntimeState } from "../runtime-state.js";
import type { StepOutput } from "../step-output.js";
import { timestampMs } from "./frame-fields.js";

/** Prompt hash over normalised text (Unicode NFC, whitespace collapsed, trimmed); never the text itself. */
export function promptFingerprint(prompt: string): string {
  return sha256Hex(prompt.normalize("NFC").replace(/\s+/g, " ").trim());
}

/** Where a transcript row sits: its record's seq and its effective time (see `RowClock`). */
export interface RowPosition {
  seq: number;
  at: number;
}

/**
 * Transcript rows are not time-ordered (the capture has a queued attachment stamped 16 s before its parent). A row's
 * effective time is the highest timestamp seen at or before its position in the file, so a late-written row with
 * an early stamp still sits after everything the file showed before it.
 */
function advanceClock(highWaterMs: number, rowMs: number | undefined): number {
  return rowMs === undefined ? highWaterMs : Math.max(highWaterMs, rowMs);
}

/** Where a transcript row was read (the seq of the record that carried it) and what its adapter reports to. */
export interface RowContext {
  seq: number;
  limits: EvidenceLimits;
  step: StepOutput;
}

/** How a transcript engine's adapter takes one row of the engine's file. */
export type RowAdapter<Format> = (
  state: RuntimeState,
  format: Format,
  raw: string,
  context: RowContext,
) => void;

/**
 * Reads one transcript row (Claude session JSONL or Codex rollout) and moves the format's clock to it; an
 * unparseable row is counted as ignored and gives undefined.
 */
export function readTranscriptRow(
  format: { highWaterMs: number },
  raw: string,
  step: StepOutput,
): Frame | undefined {
  const row = parseFrame(raw);
  if (!row) {
    step.ignore("unparseable_row");
    return undefined;
  }
  format.highWaterMs = advanceClock(format.highWaterMs, timestampMs(row.timestamp));
  return row;
}

/**
 * Inputs a prompt row can be: same runtime (the state is per runtime), same fingerprint, handed over earlier in the
 * record stream than the row, at a time not after the row's effective time (plus the configured skew), and not
 * already attributed or reported unknown.
 */
export function fingerprintCandidates(
  state: RuntimeState,
  prompt: string,
  row: RowPosition,
  limits: EvidenceLimits,
): OpenInput[] {
  const fingerprint = promptFingerprint(prompt);
  return state.inputs.filter(
    (input) =>
      input.kind === "input" &&
      !input.missing &&
      input.turnRef === undefined &&
      input.fingerprint === fingerprint &&
      input.seq < row.seq &&
      input.at <= row.at + limits.clockSkewMs,
  );
}
