import type { RunUpdateFrame } from "../../libs/contract/run-update.js";
import type { FeedEvent } from "./chaos-lamp.js";
import type { CampaignHistory, LampFeed } from "./history.js";
import type { Violation } from "./invariants.js";
import type { SentInput } from "./traffic.js";

/** How long a connection may stay open with its `run.updates_since` unanswered (Redis may be restarting). */
const REPLAY_ANSWER_ALLOWANCE_MS = 10_000;

/** What every Lamp heard of its run.update feed, counted for the report. */
export interface FeedFigures {
  runUpdatesReceived: number;
  distinctRunUpdates: number;
  replaysAnswered: number;
  replaysTruncated: number;
  replaysRefused: number;
}

export function feedFigures(history: CampaignHistory): FeedFigures {
  const events = history.lampFeeds.flatMap(({ feed }) => feed);
  const updates = events.filter((event) => event.kind === "update");
  const replays = events.filter((event) => event.kind === "replay");
  return {
    runUpdatesReceived: updates.length,
    distinctRunUpdates: new Set(
      history.lampFeeds.flatMap(({ deviceId, feed }) =>
        updatesOf(feed).map((update) => `${deviceId}|${update.updateId}`),
      ),
    ).size,
    replaysAnswered: replays.length,
    replaysTruncated: replays.filter((replay) => replay.truncated).length,
    replaysRefused: events.filter((event) => event.kind === "replay-refused").length,
  };
}

/**
 * A run.update must reach only the device that owns the run. Ownership comes from the campaign's own history:
 * the runs each Lamp registered (traffic inputs) and the requestIds each Lamp sent.
 */
export function foreignRunUpdates(history: CampaignHistory, inputs: SentInput[]): Violation[] {
  const runOwner = new Map(inputs.map((input) => [input.runId, input.deviceId]));
  const requestOwner = new Map(
    history.lampFeeds.flatMap(({ deviceId, requestIds }) =>
      [...requestIds].map((requestId): [string, string] => [requestId, deviceId]),
    ),
  );
  return history.lampFeeds.flatMap(({ deviceId, feed }) =>
    updatesOf(feed).flatMap((update) => {
      const owner = runOwner.get(update.runId) ?? requestOwner.get(update.requestId);
      if (owner === deviceId) return [];
      return [
        {
          invariant: "run.update sent to another device" as const,
          detail:
            `${deviceId} received update ${update.updateId} (${update.change}) of run ${update.runId} ` +
            `(request ${update.requestId}), owned by ${owner ?? "no Lamp of the campaign"}`,
        },
      ];
    }),
  );
}

/**
 * Each Lamp's feed: on every connection the updates come in increasing updateId order without gaps, the replay
 * after a `run.updates_since` answer starts right after the Lamp's `after` (later when `truncated`), each request is
 * answered while its connection stays open, and in the end the Lamp has heard every update its device's log holds
 * and how each of its runs ended.
 */
export function brokenFeeds(history: CampaignHistory): Violation[] {
  return history.lampFeeds.flatMap((lamp) => {
    const log = history.updateLogs.find((candidate) => candidate.deviceId === lamp.deviceId);
    return [
      ...connectionsOf(lamp).flatMap((connection) => connectionOrder(lamp, connection)),
      ...unansweredReplays(lamp, history.readAt),
      ...missingUpdates(lamp, log?.head ?? 0),
      ...unannouncedEnds(history, lamp),
    ].map((detail) => ({ invariant: "run.update out of order or missing" as const, detail }));
  });
}

function connectionOrder(lamp: LampFeed, connection: number): string[] {
  const problems: string[] = [];
  const where = `${lamp.deviceId} connection ${connection}`;
  let previous: number | undefined;
  let truncatedReplay = false;
  for (const event of lamp.feed.filter((candidate) => candidate.connection === connection)) {
    if (event.kind === "replay-refused") continue;
    if (event.kind === "replay") {
      const request = lamp.replayRequests.find((candidate) => candidate.requestId === event.requestId);
      if (request?.after !== event.after)
        problems.push(
          `${where}: replay answer ${event.requestId} says after ${event.after}, asked ${request?.after}`,
        );
      // A Lamp ahead of the log (`after` > head) is answered `truncated` and resumes at the head.
      previous = event.truncated ? Math.min(event.after, event.head) : event.after;
      truncatedReplay = event.truncated;
      continue;
    }
    const { updateId } = event.update;
    const expected = previous === undefined ? undefined : previous + 1;
    const skipAllowed = truncatedReplay && previous !== undefined && updateId > previous;
    if (expected !== undefined && updateId !== expected && !skipAllowed)
      problems.push(`${where}: update ${updateId} after ${previous} (expected ${expected})`);
    previous = updateId;
    truncatedReplay = false;
  }
  return problems;
}

function unansweredReplays(lamp: LampFeed, readAt: number): string[] {
  const answered = new Set(lamp.feed.flatMap((event) => (event.kind === "update" ? [] : [event.requestId])));
  return lamp.replayRequests.flatMap((request) => {
    if (answered.has(request.requestId)) return [];
    const openFor = (lamp.connectionEnds.get(request.connection) ?? readAt) - request.sentAt;
    if (openFor <= REPLAY_ANSWER_ALLOWANCE_MS) return [];
    return [
      `${lamp.deviceId} connection ${request.connection}: run.updates_since ${request.requestId} ` +
        `(after ${request.after}) unanswered while the connection stayed open ${openFor} ms`,
    ];
  });
}

/** Every updateId up to the log's head reached the Lamp, except those a truncated replay said were trimmed. */
function missingUpdates(lamp: LampFeed, head: number): string[] {
  const heard = new Set(updatesOf(lamp.feed).map((update) => update.updateId));
  const trimmedBelow = Math.max(0, ...truncatedReplayStarts(lamp.feed));
  const missing: number[] = [];
  for (let updateId = trimmedBelow + 1; updateId <= head; updateId++)
    if (!heard.has(updateId)) missing.push(updateId);
  if (missing.length === 0) return [];
  return [
    `${lamp.deviceId}: ${missing.length} of the log's updates up to ${head} never arrived ` +
      `(${summarize(missing)}; the Lamp's last updateId ${lamp.lastUpdateId})`,
  ];
}

/** A run of this Lamp that ended, with no run.update telling the Lamp so (unless a replay was truncated). */
function unannouncedEnds(history: CampaignHistory, lamp: LampFeed): string[] {
  if (truncatedReplayStarts(lamp.feed).length > 0) return [];
  const heardStates = new Set(updatesOf(lamp.feed).map((update) => `${update.runId}|${update.state}`));
  return history.runs
    .filter((run) => run.deviceId === lamp.deviceId && run.state !== "pending")
    .filter((run) => !heardStates.has(`${run.runId}|${run.state}`))
    .map((run) => `${lamp.deviceId}: run ${run.runId} ended ${run.state} and no run.update said so`);
}

/** The first updateId of each truncated replay (the ids before it were trimmed from the log). */
function truncatedReplayStarts(feed: FeedEvent[]): number[] {
  const starts: number[] = [];
  feed.forEach((event, index) => {
    if (event.kind !== "replay" || !event.truncated) return;
    const next = feed.slice(index + 1).find((later) => later.connection === event.connection);
    starts.push(next?.kind === "update" ? next.update.updateId - 1 : event.head);
  });
  return starts;
}

function connectionsOf(lamp: LampFeed): number[] {
  return [...new Set(lamp.feed.map((event) => event.connection))];
}

function updatesOf(feed: FeedEvent[]): RunUpdateFrame[] {
  return feed.flatMap((event) => (event.kind === "update" ? [event.update] : []));
}

function summarize(ids: number[]): string {
  const shown = ids.slice(0, 10).join(", ");
  return ids.length > 10 ? `${shown}, …` : shown;
}
