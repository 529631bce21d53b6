import type { StoryStep } from "./story.js";
import { describeFailure, type StoryPlay } from "./story-play.js";
import { auditPlaybacks } from "./story-audit.js";

/**
 * Plays the steps in order and narrates each: a heading, what happened, what the Lamp was told, and one verdict
 * line `✓ [i/n] <title> — reached: <state>` (or `✗ … — <what went wrong>`); then the playback audit. A step that
 * fails does not stop the story. Resolves true when every step and the audit reached their expected state.
 */
export async function tellStory(
  steps: readonly StoryStep[],
  play: StoryPlay,
  write: (line: string) => void,
): Promise<boolean> {
  let allReached = true;
  for (const [index, step] of steps.entries()) {
    const tag = `[${index + 1}/${steps.length}] ${step.title}`;
    write("");
    write(`${tag} — ${step.point}`);
    const runsBefore = play.runCount;
    let verdict: string;
    try {
      verdict = `  ✓ ${tag} — reached: ${await step.play(play)}`;
    } catch (error) {
      allReached = false;
      verdict = `  ✗ ${tag} — ${describeFailure(error)}`;
    }
    const told = play.told(play.runsSince(runsBefore));
    if (told.length > 0) write("    the Lamp was told:");
    for (const line of told) write(`      ${line}`);
    write(verdict);
  }
  const problems = auditPlaybacks(play.lamp.playbackStarts, play.expectedPlaybacks);
  const results = play.expectedPlaybacks.size;
  write("");
  if (problems.length === 0)
    write(`  ✓ audit — ${play.lamp.playbackStarts.length} playbacks for ${results} results, each sent once`);
  else write(`  ✗ audit — ${problems.join("; ")}`);
  return allReached && problems.length === 0;
}
