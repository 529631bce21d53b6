import { describe, expect, it } from "vitest";
import { auditPlaybacks } from "./story-audit.js";

const start = (playbackId: string, resultId: string) => ({
  playbackId,
  resultId,
  voiceTargetId: "kitchen",
  text: "…",
});

describe("the demo's closing playback audit", () => {
  it("holds when each result had the playbacks its step expected, each sent once", () => {
    const starts = [start("answer-1", "r1"), start("answer-2", "r2"), start("repeat-1", "r2")];
    expect(
      auditPlaybacks(
        starts,
        new Map([
          ["r1", 1],
          ["r2", 2],
        ]),
      ),
    ).toEqual([]);
  });

  it("names a playback sent twice, a result with the wrong count and a result nobody expected", () => {
    const starts = [start("answer-1", "r1"), start("answer-1", "r1"), start("answer-3", "r3")];
    expect(
      auditPlaybacks(
        starts,
        new Map([
          ["r1", 1],
          ["r2", 1],
        ]),
      ),
    ).toEqual([
      "playback answer-1 was sent 2 times",
      "result r1 had 2 playback(s), expected 1",
      "result r2 had 0 playback(s), expected 1",
      "result r3 was spoken, but no step expected it",
    ]);
  });
});
