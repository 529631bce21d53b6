import { basename } from "node:path";
import { DEMO_AGENTS } from "./demo-agents.js";
import type { StoryPlay } from "./story-play.js";

/** The notice a failed task speaks; the demo sets FAILURE_NOTICE_TEXT to it so the check does not depend on env. */
export const FAILURE_NOTICE = "That task failed. The details are on the screen.";

export interface StoryStep {
  title: string;
  /** What the step shows, in one line. */
  point: string;
  /** Plays the step; resolves with the state reached, throws when another state was reached (or none in time). */
  play(story: StoryPlay): Promise<string>;
}

const request: StoryStep = {
  title: "A request",
  point: "one voice request, one engine result, one spoken answer",
  async play(story: StoryPlay) {
    const a = await story.ask("A", DEMO_AGENTS.answer.agentId, "What is the tallest mountain on Mars?");
    const resultId = await story.resolvedCompleted(a);
    const played = await story.spoken(resultId);
    story.expectPlaybacks(resultId, 1);
    return `resolved · completed, spoken once (${basename(played.file)})`;
  },
};

const steering: StoryStep = {
  title: "A steering correction",
  point: "B corrects A while A's task runs: the engine folds B in, one answer covers both and is spoken once",
  async play(story: StoryPlay) {
    const a = await story.ask("A", DEMO_AGENTS.steer.agentId, "Plan a small house for me.");
    const b = await story.ask("B", DEMO_AGENTS.steer.agentId, "Make the roof red.");
    const [resultA, resultB] = [await story.resolvedCompleted(a), await story.resolvedCompleted(b)];
    story.expect(resultA === resultB, `A and B were answered by different results (${resultA}, ${resultB})`);
    const stored = await story.result(resultA);
    const members = stored.members.map((member) => member.runId).sort();
    story.expect(
      members.join() === [a.runId, b.runId].sort().join(),
      `the result lists ${members.length} member(s), not exactly A and B`,
    );
    await story.spoken(resultA);
    story.expectPlaybacks(resultA, 1);
    return "A and B resolved by one result listing both · completed, spoken once";
  },
};

const queued: StoryStep = {
  title: "A queued request",
  point: "B arrives while A runs but waits its turn: two results, each answer spoken on its own",
  async play(story: StoryPlay) {
    const a = await story.ask("A", DEMO_AGENTS.queued.agentId, "Book a table for two at eight.");
    const b = await story.ask("B", DEMO_AGENTS.queued.agentId, "And a taxi at half past seven.");
    const [resultA, resultB] = [await story.resolvedCompleted(a), await story.resolvedCompleted(b)];
    story.expect(resultA !== resultB, `A and B were answered by one result (${resultA})`);
    for (const resultId of [resultA, resultB]) {
      await story.spoken(resultId);
      story.expectPlaybacks(resultId, 1);
    }
    return "A and B resolved by two results · completed, each spoken once";
  },
};

const unproven: StoryStep = {
  title: "A request whose membership cannot be proven",
  point: "an engine that never echoes our ids answers two overlapping requests: no guess, nothing spoken",
  async play(story: StoryPlay) {
    const a = await story.ask("A", DEMO_AGENTS.echoless.agentId, "Turn off the lights.");
    const b = await story.ask("B", DEMO_AGENTS.echoless.agentId, "And turn down the heating.");
    for (const run of [a, b]) {
      const end = await story.ending(run);
      story.expect(
        end.state === "unknown" && end.reason === "RESULT_EVIDENCE_MISSING" && end.resultId === undefined,
        `run ${run.label} ended ${end.state} ${end.outcome ?? end.reason ?? ""}`.trim(),
      );
    }
    return "A and B ended unknown · RESULT_EVIDENCE_MISSING (the Lamp was told why), nothing spoken";
  },
};

const failedTask: StoryStep = {
  title: "A failed task",
  point: "the engine's turn fails: the Lamp hears a short notice, never the failure text as an answer",
  async play(story: StoryPlay) {
    const a = await story.ask("A", DEMO_AGENTS.failing.agentId, "Deploy the website.");
    const end = await story.ending(a);
    story.expect(
      end.state === "resolved" && end.outcome === "failed" && end.resultId !== undefined,
      `run A ended ${end.state} ${end.outcome ?? end.reason ?? ""}`.trim(),
    );
    const suppressed = await story.change(a, "suppressed");
    story.expect(suppressed.reason === "failed_result", `the answer was withheld for ${suppressed.reason}`);
    const played = await story.spoken(end.resultId);
    story.expect(played.text === FAILURE_NOTICE, `the Lamp spoke "${played.text}"`);
    story.expectPlaybacks(end.resultId, 1);
    return "resolved · failed, the answer withheld (failed_result) and the short notice spoken";
  },
};

const lostAck: StoryStep = {
  title: "A lost playback ack",
  point: "the Lamp plays the answer but its acks are lost: the playback is uncertain and is not sent again",
  async play(story: StoryPlay) {
    story.lamp.loseAcks(true);
    try {
      const a = await story.ask("A", DEMO_AGENTS.lostAck.agentId, "Where is my parcel?");
      const resultId = await story.resolvedCompleted(a);
      await story.spoken(resultId);
      const playback = await story.change(a, "playback");
      story.expect(playback.reason === "ack_timeout", `the playback ended ${playback.reason}`);
      const stored = await story.result(resultId);
      story.expect(stored.playback?.state === "uncertain", `the answer is ${stored.playback?.state}`);
      story.expectPlaybacks(resultId, 1);
      story.uncertainResultId = resultId;
      return "resolved · completed, playback uncertain (ack_timeout), not sent again";
    } finally {
      story.lamp.loseAcks(false);
    }
  },
};

const sayThatAgain: StoryStep = {
  title: '"Say that again"',
  point: "the user asks for the answer they may have missed: a new, explicit playback of the stored result",
  async play(story: StoryPlay) {
    const resultId = story.uncertainResultId;
    story.expect(
      resultId !== undefined,
      "no uncertain answer to repeat (the previous step did not reach it)",
    );
    const playbackId = await story.repeat(resultId);
    const played = await story.spoken(resultId, playbackId);
    story.expectPlaybacks(resultId, 2);
    return `a new playback of the same result, spoken (${basename(played.file)})`;
  },
};

export const STORY: readonly StoryStep[] = [
  request,
  steering,
  queued,
  unproven,
  failedTask,
  lostAck,
  sayThatAgain,
];
