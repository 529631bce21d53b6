import type { RunUpdateFrame } from "../../libs/contract/run-update.js";

const INPUT_PHRASES: Record<string, string> = {
  steering: "added to the running task",
  native_queue: "queued behind the current task",
  daemon_queue: "queued behind the current task",
  native_input: "handed to the engine",
  direct: "accepted",
};

/** What the change means to the person holding the Lamp, in a few words. */
function describe(update: RunUpdateFrame): string {
  switch (update.change) {
    case "receipt": {
      const mode = update.input ? INPUT_PHRASES[update.input.mode] : undefined;
      return [update.receiptState ?? "receipt", mode].filter(Boolean).join(": ");
    }
    case "cancelled":
      return "cancelled: nothing will be spoken";
    case "resolved":
      return `${update.outcome ?? "resolved"} (result ${update.resultId ?? "?"})`;
    case "suppressed":
      return `answer not spoken: ${update.reason ?? "suppressed"}`;
    case "playback":
      return `playback ${update.reason ?? "ended"}${update.playbackId ? ` (${update.playbackId})` : ""}`;
    case "unknown":
      return `ended without an answer: ${update.reason ?? "unknown"}`;
  }
}

/** One readable line per run.update, e.g. `#12 run 3f2a9c1e resolved · completed (result r-1)`. */
export function runUpdateLine(update: RunUpdateFrame): string {
  return `#${update.updateId} run ${update.runId.slice(0, 8)} ${update.state} · ${describe(update)}`;
}
