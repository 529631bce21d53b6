import { relative } from "node:path";
import type { RunUpdateFrame } from "../../libs/contract/run-update.js";
import { runUpdateLine } from "../lamp-sim/run-update-line.js";
import { NotReached, type DemoLamp, type Played } from "./demo-lamp.js";
import type { OsResults, StoredResult } from "./os-results.js";
import { errorMessage } from "../../libs/errors/error-message.js";

/** A step found the system in another state than the story expects; the message says what it found. */
export class Unexpected extends Error {}

export interface AskedRun {
  label: string;
  runId: string;
}

export interface StoryDeps {
  lamp: DemoLamp;
  results: OsResults;
  narrate: (line: string) => void;
  /** How long a step waits for each state it expects. */
  waitMs: number;
}

/**
 * What a step can do and check, and what the whole story has seen: the runs each step asked for (named A, B, …
 * in the narrative) and how many playbacks each result should have had by the end.
 */
export class StoryPlay {
  private readonly runs: AskedRun[] = [];
  readonly expectedPlaybacks = new Map<string, number>();
  /** The result whose playback the Lamp never acked; "say that again" repeats it. */
  uncertainResultId: string | undefined;

  constructor(private readonly deps: StoryDeps) {}

  get lamp(): DemoLamp {
    return this.deps.lamp;
  }

  narrate(line: string): void {
    this.deps.narrate(line);
  }

  async ask(label: string, agentId: string, text: string): Promise<AskedRun> {
    this.narrate(`Lamp → ${agentId}  ${label}: "${text}"`);
    const { runId } = await this.lamp.say(agentId, text, this.deps.waitMs);
    const run = { label, runId };
    this.runs.push(run);
    return run;
  }

  /** The update that ended the run (resolved or unknown). */
  ending(run: AskedRun): Promise<RunUpdateFrame> {
    return this.lamp.until(`run ${run.label} to end`, this.deps.waitMs, () =>
      this.lamp.updatesOf(run.runId).find((update) => update.state !== "pending"),
    );
  }

  /** A later update of the run with this change (e.g. `suppressed`, `playback`). */
  change(run: AskedRun, change: RunUpdateFrame["change"]): Promise<RunUpdateFrame> {
    return this.lamp.until(`a '${change}' update of run ${run.label}`, this.deps.waitMs, () =>
      this.lamp.latestUpdateOf(run.runId, change),
    );
  }

  async spoken(resultId: string, playbackId?: string): Promise<Played> {
    const played = await this.lamp.until(`the Lamp to play result ${resultId}`, this.deps.waitMs, () =>
      this.lamp
        .playedFor(resultId)
        .find((candidate) => playbackId === undefined || candidate.playbackId === playbackId),
    );
    this.narrate(`spoken: "${played.text}" → ${relative(process.cwd(), played.file)}`);
    return played;
  }

  /** "Say that again": the new playback's id. */
  async repeat(resultId: string): Promise<string> {
    this.narrate(`Lamp → playback.repeat of result ${resultId}`);
    return this.lamp.repeat(resultId, this.deps.waitMs);
  }

  async resolvedCompleted(run: AskedRun): Promise<string> {
    const end = await this.ending(run);
    this.expect(
      end.state === "resolved" && end.outcome === "completed" && end.resultId !== undefined,
      `run ${run.label} ended ${end.state} ${end.outcome ?? end.reason ?? ""}`.trim(),
    );
    return end.resultId ?? "";
  }

  result(resultId: string): Promise<StoredResult> {
    return this.deps.results.get(resultId);
  }

  expectPlaybacks(resultId: string, count: number): void {
    this.expectedPlaybacks.set(resultId, count);
  }

  expect(condition: boolean, found: string): asserts condition {
    if (!condition) throw new Unexpected(found);
  }

  /** What the Lamp was told about the given runs, in order (run.update, one line each). */
  told(runs: readonly AskedRun[]): string[] {
    const labels = new Map(runs.map((run) => [run.runId, run.label]));
    return this.lamp.runUpdates
      .filter((update) => labels.has(update.runId))
      .map((update) => `${labels.get(update.runId)}  ${runUpdateLine(update)}`);
  }

  runsSince(count: number): AskedRun[] {
    return this.runs.slice(count);
  }

  get runCount(): number {
    return this.runs.length;
  }
}

export function describeFailure(error: unknown): string {
  if (error instanceof NotReached) return `not reached: ${error.what}`;
  if (error instanceof Unexpected) return `unexpected state: ${error.message}`;
  return `failed: ${errorMessage(error)}`;
}
