import { describe, expect, it } from "vitest";
import type { RunUpdateFrame } from "../../libs/contract/run-update.js";
import type { PlaybackRecord } from "../../libs/contract/os-playback.js";
import type { RunRecord } from "../../libs/os-store/run-record.js";
import type { RunDeadlines } from "../../tools/chaos/campaign-plan.js";
import type { FeedEvent } from "../../tools/chaos/chaos-lamp.js";
import type { CampaignHistory, LampFeed } from "../../tools/chaos/history.js";
import { checkHistory, type InvariantName } from "../../tools/chaos/invariants.js";
import type { SentInput } from "../../tools/chaos/traffic.js";

const T0 = Date.parse("2026-12-02T00:00:00.000Z");
const DEADLINES: RunDeadlines = { voiceTargetTtlMs: 60_000, graceMs: 10_000, settleMs: 15_000 };

function run(runId: string, overrides: Partial<RunRecord> = {}): RunRecord {
  return {
    runId,
    deviceId: "lamp-1",
    agentId: "agent",
    machineId: "machine",
    idempotencyKey: `key-${runId}`,
    requestId: `request-${runId}`,
    text: "hello",
    voiceTargetId: "target-1",
    voiceTargetExpiresAt: T0 + 60_000,
    replyRoute: "voice",
    state: "resolved",
    resolvedAt: T0 + 1_000,
    createdAt: T0,
    ...overrides,
  };
}

function update(updateId: number, runId: string, overrides: Partial<RunUpdateFrame> = {}): RunUpdateFrame {
  return {
    type: "run.update",
    updateId,
    runId,
    requestId: `request-${runId}`,
    state: "pending",
    change: "receipt",
    at: new Date(T0 + updateId).toISOString(),
    ...overrides,
  };
}

const live = (connection: number, frame: RunUpdateFrame): FeedEvent => ({
  kind: "update",
  connection,
  receivedAt: T0,
  update: frame,
});

const replay = (connection: number, after: number, head: number, truncated = false): FeedEvent => ({
  kind: "replay",
  connection,
  receivedAt: T0,
  requestId: `replay-${connection}`,
  after,
  head,
  truncated,
});

function lamp(deviceId: string, feed: FeedEvent[]): LampFeed {
  const connections = [...new Set(feed.map((event) => event.connection))];
  return {
    deviceId,
    feed,
    replayRequests: feed.flatMap((event) =>
      event.kind === "replay"
        ? [{ connection: event.connection, requestId: event.requestId, after: event.after, sentAt: T0 }]
        : [],
    ),
    requestIds: new Set(),
    connectionEnds: new Map(connections.map((connection) => [connection, T0])),
    lastUpdateId: Math.max(0, ...feed.flatMap((e) => (e.kind === "update" ? [e.update.updateId] : []))),
  };
}

function history(overrides: Partial<CampaignHistory>): CampaignHistory {
  return {
    harnessResults: [],
    receipts: [],
    runs: [],
    osResults: [],
    outbox: [],
    playbacks: [],
    rejections: [],
    protocolErrors: [],
    deadLetters: [],
    engineWrites: [],
    received: [],
    routingOrder: [],
    lampFeeds: [],
    updateLogs: [],
    malformedFrames: [],
    readAt: T0 + 200_000,
    ...overrides,
  };
}

function input(runId: string, deviceId = "lamp-1"): SentInput {
  return {
    deviceId,
    agentId: "agent",
    runId,
    requestId: `request-${runId}`,
    text: "hello",
    turn: 0,
    filler: false,
    attempts: 1,
  };
}

function violated(
  of: CampaignHistory,
  inputs: SentInput[] = [input("r1")],
): Array<{ invariant: InvariantName; detail: string }> {
  return checkHistory(of, { inputs, cancels: [] }, DEADLINES).violations;
}

/** Run r1 ended unknown at update 3 of a log whose head is 3; the Lamp heard `feed`. */
const ended = { state: "unknown", change: "unknown", reason: "RESULT_NOT_RECEIVED" } as const;
const endedFeed = (feed: FeedEvent[]) =>
  history({
    runs: [run("r1", { state: "unknown", resolvedAt: undefined, endReason: "RESULT_NOT_RECEIVED" })],
    lampFeeds: [lamp("lamp-1", feed)],
    updateLogs: [{ deviceId: "lamp-1", head: 3, entries: [] }],
  });

describe("campaign invariants: the run.update feed", () => {
  it("updates in order, with a replay after a reconnect that starts right after the Lamp's last updateId, pass", () => {
    const feed = [
      live(1, update(1, "r1")),
      live(1, update(2, "r1")),
      replay(2, 2, 3),
      live(2, update(3, "r1", ended)),
    ];
    expect(violated(endedFeed(feed))).toEqual([]);
  });

  it("a replay that skips the update after `after` is out of order, and the skipped update is missing", () => {
    const feed = [live(1, update(1, "r1")), replay(2, 1, 3), live(2, update(3, "r1", ended))];
    const names = violated(endedFeed(feed)).map((v) => v.invariant);
    expect(names).toEqual(["run.update out of order or missing", "run.update out of order or missing"]);
  });

  it("a truncated replay may start later than `after + 1`", () => {
    const feed = [live(1, update(1, "r1")), replay(2, 1, 3, true), live(2, update(3, "r1", ended))];
    expect(violated(endedFeed(feed))).toEqual([]);
  });

  it("a run.updates_since left unanswered while its connection stayed open is a broken feed", () => {
    const feed = [live(1, update(1, "r1")), live(1, update(2, "r1")), live(1, update(3, "r1", ended))];
    const unanswered = {
      ...lamp("lamp-1", feed),
      replayRequests: [{ connection: 1, requestId: "lost", after: 0, sentAt: T0 }],
      connectionEnds: new Map([[1, T0 + 60_000]]),
    };
    const of = history({ ...endedFeed(feed), lampFeeds: [unanswered] });
    expect(violated(of).map((v) => v.detail)).toEqual([expect.stringContaining("run.updates_since lost")]);
  });

  it("a run that ended without a run.update saying so is missing from its Lamp's feed", () => {
    const of = endedFeed([live(1, update(1, "r1")), live(1, update(2, "r1")), live(1, update(3, "r1"))]);
    expect(violated(of).map((v) => v.detail)).toEqual([expect.stringContaining("no run.update said so")]);
  });

  it("a run.update of another Lamp's run is one sent to another device", () => {
    const of = history({
      runs: [run("r2", { deviceId: "lamp-2", state: "pending" })],
      lampFeeds: [lamp("lamp-1", [live(1, update(1, "r2"))])],
      updateLogs: [{ deviceId: "lamp-1", head: 1, entries: [] }],
      readAt: T0,
    });
    expect(violated(of, [input("r2", "lamp-2")]).map((v) => v.invariant)).toEqual([
      "run.update sent to another device",
    ]);
  });
});

describe("campaign invariants: run deadlines", () => {
  it("a run still pending after expiry + grace + settle has missed its deadline; one before it is not judged", () => {
    const pending = run("r1", { state: "pending", resolvedAt: undefined });
    const past = history({ runs: [pending], readAt: T0 + 60_000 + 25_001 });
    const ahead = history({ runs: [pending], readAt: T0 + 60_000 + 25_000 });
    expect(violated(past).map((v) => v.invariant)).toEqual(["run not ended by its deadline"]);
    expect(violated(ahead)).toEqual([]);
    expect(
      checkHistory(ahead, { inputs: [], cancels: [] }, DEADLINES).figures.runsPendingBeforeDeadline,
    ).toBe(1);
  });

  it("a run that ended unknown after its deadline missed it, judged by its first terminal run.update", () => {
    const late = run("r1", { state: "unknown", resolvedAt: undefined, endReason: "RESULT_NOT_RECEIVED" });
    const at = (ms: number) => new Date(T0 + ms).toISOString();
    const ending = (ms: number) =>
      history({
        runs: [late],
        lampFeeds: [
          lamp("lamp-1", [live(1, update(1, "r1", { state: "unknown", change: "unknown", at: at(ms) }))]),
        ],
        updateLogs: [{ deviceId: "lamp-1", head: 1, entries: [] }],
      });
    expect(violated(ending(85_000))).toEqual([]);
    expect(violated(ending(85_001)).map((v) => v.invariant)).toEqual(["run not ended by its deadline"]);
  });
});

describe("campaign invariants: cancelled runs", () => {
  const answer = (sendingAt: number): PlaybackRecord => ({
    deviceId: "lamp-1",
    playbackId: "answer-1",
    resultKey: "result-key-1",
    resultId: "result-1",
    kind: "answer",
    state: "played",
    newestRunId: "r1",
    voiceTargetId: "target-1",
    gatewayId: "gateway-1",
    text: "the answer",
    createdAt: T0 + 1_000,
    sendingAt,
  });
  const spoken = (cancel: { state: "pending" | "resolved"; at: number }, sendingAt: number) =>
    history({
      runs: [run("r1", { cancelledAt: T0 + cancel.at })],
      playbacks: [{ deviceId: "lamp-1", record: answer(T0 + sendingAt) }],
      received: [
        {
          deviceId: "lamp-1",
          playbackId: "answer-1",
          resultId: "result-1",
          receivedAt: T0 + sendingAt + 10,
          connection: 1,
          ack: "prompt",
        },
      ],
      updateLogs: [
        {
          deviceId: "lamp-1",
          head: 1,
          entries: [
            {
              updateId: 1,
              record: {
                runId: "r1",
                requestId: "request-r1",
                state: cancel.state,
                change: "cancelled",
                at: T0 + cancel.at,
              },
            },
          ],
        },
      ],
    });
  const cancelledSpoken = (of: CampaignHistory) =>
    violated(of).filter((v) => v.invariant === "cancelled run spoken");

  it("an answer of a run cancelled while pending must never reach the Lamp", () => {
    expect(cancelledSpoken(spoken({ state: "pending", at: 500 }, 2_000))).toHaveLength(1);
  });

  it("an answer claimed well after its run's cancel must not reach the Lamp; one claimed about then may", () => {
    expect(cancelledSpoken(spoken({ state: "resolved", at: 1_500 }, 3_000))).toHaveLength(1);
    expect(cancelledSpoken(spoken({ state: "resolved", at: 1_500 }, 1_600))).toEqual([]);
    expect(cancelledSpoken(spoken({ state: "resolved", at: 1_500 }, 1_400))).toEqual([]);
  });
});

describe("campaign invariants: answers in routing order", () => {
  const start = (resultId: string, at: number, playbackId = `answer-${resultId}`) => ({
    deviceId: "lamp-1",
    playbackId,
    resultId,
    receivedAt: T0 + at,
    connection: 1,
    ack: "prompt" as const,
  });
  const repeat = (resultId: string): { deviceId: string; record: PlaybackRecord } => ({
    deviceId: "lamp-1",
    record: {
      deviceId: "lamp-1",
      playbackId: `repeat-${resultId}`,
      resultKey: `key-${resultId}`,
      resultId,
      kind: "repeat",
      state: "played",
      newestRunId: "r1",
      voiceTargetId: "target-1",
      gatewayId: "gateway-1",
      text: "again",
      createdAt: T0,
    },
  });
  const outOfOrder = (of: CampaignHistory) =>
    violated(of).filter((v) => v.invariant === "answer started out of routing order");
  const routed = { deviceId: "lamp-1", resultIds: ["res-1", "res-2", "res-3"] };

  it.each([
    {
      case: "answers started in the order they were routed pass",
      received: [start("res-1", 1), start("res-2", 2), start("res-3", 3)],
      violations: [],
    },
    {
      case: "an answer that started after one routed later is out of order",
      received: [start("res-2", 1), start("res-1", 2), start("res-3", 3)],
      violations: ["lamp-1: res-1 (routed #1) started after res-2 (routed #2)"],
    },
    {
      case: "a result that never started (suppressed) leaves the others' order judged",
      received: [start("res-1", 1), start("res-3", 2)],
      violations: [],
    },
    {
      case: "an explicit repeat of an earlier result, asked for after a later answer, is not a start out of order",
      received: [start("res-2", 1), start("res-1", 2, "repeat-res-1")],
      violations: [],
    },
  ])("$case", ({ received, violations }) => {
    const of = history({ routingOrder: [routed], received, playbacks: [repeat("res-1")] });
    expect(outOfOrder(of).map((v) => v.detail)).toEqual(violations);
  });
});
