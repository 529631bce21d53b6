import { describe, expect, it } from "vitest";
import type { MemberRun } from "../store/os-store-reader.js";
import { decideDelivery, newestMember, repeatBlocker } from "./decide-delivery.js";

const NOW = 1_000_000;
const run = (runId: string, createdAt: number, overrides: Partial<MemberRun> = {}): MemberRun => ({
  runId,
  createdAt,
  voiceTargetId: "target-1",
  voiceTargetExpiresAt: NOW + 60_000,
  replyRoute: "voice",
  cancelledAt: undefined,
  ...overrides,
});

describe("decideDelivery", () => {
  it("speaks a completed result to the newest member's live voice target", () => {
    const decision = decideDelivery("completed", [run("a", 1), run("b", 2)], NOW);
    expect(decision).toEqual({ action: "speak", newest: run("b", 2) });
  });

  it("takes the newest member by createdAt, not by position", () => {
    expect(newestMember([run("late", 9), run("early", 1)]).runId).toBe("late");
    expect(newestMember([run("first", 5), run("second", 5)]).runId).toBe("second");
  });

  it("suppresses when the newest member's voice target has expired", () => {
    const decision = decideDelivery(
      "completed",
      [run("a", 1), run("b", 2, { voiceTargetExpiresAt: NOW })],
      NOW,
    );
    expect(decision).toMatchObject({ action: "suppress", reason: "expired" });
  });

  it("does not suppress when only an older member's target expired", () => {
    const runs = [run("a", 1, { voiceTargetExpiresAt: NOW - 1 }), run("b", 2)];
    expect(decideDelivery("completed", runs, NOW).action).toBe("speak");
  });

  it("suppresses when the newest member's reply route is not voice", () => {
    for (const replyRoute of ["display", "silent"] as const)
      expect(decideDelivery("completed", [run("a", 1), run("b", 2, { replyRoute })], NOW)).toMatchObject({
        action: "suppress",
        reason: "not_voice_route",
      });
  });

  it("suppresses when the newest member was cancelled", () => {
    const runs = [run("a", 1), run("b", 2, { cancelledAt: NOW - 5 })];
    expect(decideDelivery("completed", runs, NOW)).toMatchObject({ action: "suppress", reason: "cancelled" });
  });

  it("still speaks when only an older member was cancelled", () => {
    const runs = [run("a", 1, { cancelledAt: NOW - 5 }), run("b", 2)];
    expect(decideDelivery("completed", runs, NOW).action).toBe("speak");
  });

  it("suppresses a group spanning distinct voice targets instead of picking the latest", () => {
    const runs = [run("a", 1, { voiceTargetId: "kitchen" }), run("b", 2, { voiceTargetId: "desk" })];
    expect(decideDelivery("completed", runs, NOW)).toMatchObject({
      action: "suppress",
      reason: "mixed_destinations",
    });
  });

  it("never speaks a failed result as an answer, and allows a notice only to a live voice target", () => {
    expect(decideDelivery("failed", [run("a", 1)], NOW)).toMatchObject({
      action: "suppress",
      reason: "failed_result",
      notice: true,
    });
    expect(decideDelivery("failed", [run("a", 1, { replyRoute: "display" })], NOW)).toMatchObject({
      reason: "failed_result",
      notice: false,
    });
  });

  it("suppresses a cancelled result as cancelled_result", () => {
    expect(decideDelivery("cancelled", [run("a", 1)], NOW)).toMatchObject({
      action: "suppress",
      reason: "cancelled_result",
      notice: false,
    });
  });
});

describe("repeatBlocker", () => {
  const cases = [
    { outcome: "completed", outbox: { state: "played" }, blocker: undefined },
    { outcome: "completed", outbox: undefined, blocker: undefined },
    { outcome: "completed", outbox: { state: "suppressed", reason: "expired" }, blocker: undefined },
    { outcome: "completed", outbox: { state: "suppressed", reason: "cancelled" }, blocker: undefined },
    {
      outcome: "completed",
      outbox: { state: "suppressed", reason: "mixed_destinations" },
      blocker: "mixed_destinations",
    },
    {
      outcome: "completed",
      outbox: { state: "suppressed", reason: "not_voice_route" },
      blocker: "not_voice_route",
    },
    { outcome: "failed", outbox: { state: "suppressed", reason: "failed_result" }, blocker: "failed_result" },
    { outcome: "cancelled", outbox: undefined, blocker: "cancelled_result" },
  ] as const;
  for (const { outcome, outbox, blocker } of cases)
    it(`a repeat of a ${outcome} result with outbox ${JSON.stringify(outbox)} is ${blocker ?? "spoken"}`, () => {
      expect(repeatBlocker(outcome, outbox)).toBe(blocker);
    });
});
