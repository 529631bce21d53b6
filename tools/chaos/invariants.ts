import type { RunRecord } from "../../libs/os-store/run-record.js";
import type { RunDeadlines } from "./campaign-plan.js";
import { brokenFeeds, feedFigures, foreignRunUpdates, type FeedFigures } from "./feed-invariants.js";
import type { CampaignHistory } from "./history.js";
import type { TrafficFigures } from "./traffic.js";

/** One concrete breach of an invariant, with enough context to find it in the store. */
export interface Violation {
  invariant: InvariantName;
  detail: string;
}

export type InvariantName =
  | "duplicate utterance"
  | "lost result"
  | "run resolved that no result listed"
  | "input sent twice to an engine"
  | "protocol error"
  | "run not ended by its deadline"
  | "run.update sent to another device"
  | "run.update out of order or missing"
  | "cancelled run spoken"
  | "malformed frame to a Lamp"
  | "answer started out of routing order";

export interface UncertainPlayback {
  deviceId: string;
  playbackId: string;
  resultId: string;
  reason: string;
  cause: string;
}

export interface CampaignFigures extends FeedFigures {
  inputsSent: number;
  runs: number;
  runsResolved: number;
  runsPending: number;
  runsUnknown: number;
  resultsProduced: number;
  groupResults: number;
  resultsStoredByOs: number;
  resultsSpoken: number;
  playbackStartsReceived: number;
  explicitRepeatsSpoken: number;
  duplicateUtterances: number;
  lostResults: number;
  resolvedUnlisted: number;
  inputsSentTwice: number;
  protocolErrors: number;
  runsPastDeadline: number;
  foreignRunUpdates: number;
  brokenFeeds: number;
  cancelledSpoken: number;
  malformedFrames: number;
  answersOutOfOrder: number;
  /** voice.cancel sent, by `<moment>: <answer>` (answer cancelled / not_found / unanswered). */
  cancels: Record<string, number>;
  /** Cancelled runs by the state their `cancelled` run.update reported (pending: the engine may still answer). */
  cancelledRunStates: Record<string, number>;
  /** Runs that ended unknown, by reason (the Harness receipt's code or the OS's deadline reason). */
  runsUnknownByReason: Record<string, number>;
  /** Pending runs whose deadline was still ahead when the history was read (not judged). */
  runsPendingBeforeDeadline: number;
  uncertainPlaybacks: UncertainPlayback[];
  outboxStates: Record<string, number>;
  /** Inputs that never got a result, by the Harness receipt's state/code (e.g. `unknown/ENGINE_EXITED`). */
  unansweredInputs: Record<string, number>;
  rejectionsByReason: Record<string, number>;
  deadLetters: Record<string, number>;
}

export interface CampaignVerdict {
  figures: CampaignFigures;
  violations: Violation[];
}

/** Checks the invariants over the whole history and counts the figures. */
export function checkHistory(
  history: CampaignHistory,
  traffic: Pick<TrafficFigures, "inputs" | "cancels">,
  deadlines: RunDeadlines,
): CampaignVerdict {
  const inputs = traffic.inputs;
  const violations: Violation[] = [
    ...duplicateUtterances(history),
    ...lostResults(history),
    ...resolvedUnlisted(history),
    ...inputsSentTwice(history),
    ...history.protocolErrors.map(({ deviceId, record }) => ({
      invariant: "protocol error" as const,
      detail: `${deviceId}: ${JSON.stringify(record)}`,
    })),
    ...runsPastDeadline(history, deadlines),
    ...foreignRunUpdates(history, inputs),
    ...brokenFeeds(history),
    ...cancelledSpoken(history),
    ...history.malformedFrames.map(({ deviceId, connection, frame, error }) => ({
      invariant: "malformed frame to a Lamp" as const,
      detail: `${deviceId} connection ${connection}: ${error} in ${frame}`,
    })),
    ...answersOutOfRoutingOrder(history),
  ];
  const count = (name: InvariantName) => violations.filter((v) => v.invariant === name).length;
  const spoken = new Set(history.received.map((p) => `${p.deviceId}|${p.resultId}`));
  const runs = history.runs;
  return {
    violations,
    figures: {
      inputsSent: inputs.length,
      runs: runs.length,
      runsResolved: runs.filter((run) => run.state === "resolved").length,
      runsPending: runs.filter((run) => run.state === "pending").length,
      runsUnknown: runs.filter((run) => run.state === "unknown").length,
      resultsProduced: history.harnessResults.length,
      groupResults: history.harnessResults.filter((r) => r.payload.correlation.scope === "group").length,
      resultsStoredByOs: history.osResults.length,
      resultsSpoken: spoken.size,
      playbackStartsReceived: history.received.length,
      explicitRepeatsSpoken: history.received.filter(
        (p) => kindOf(history, p.deviceId, p.playbackId) === "repeat",
      ).length,
      duplicateUtterances: count("duplicate utterance"),
      lostResults: count("lost result"),
      resolvedUnlisted: count("run resolved that no result listed"),
      inputsSentTwice: count("input sent twice to an engine"),
      protocolErrors: count("protocol error"),
      runsPastDeadline: count("run not ended by its deadline"),
      foreignRunUpdates: count("run.update sent to another device"),
      brokenFeeds: count("run.update out of order or missing"),
      cancelledSpoken: count("cancelled run spoken"),
      malformedFrames: count("malformed frame to a Lamp"),
      answersOutOfOrder: count("answer started out of routing order"),
      ...feedFigures(history),
      cancels: tally(traffic.cancels.map((cancel) => `${cancel.moment}: ${cancel.answer}`)),
      cancelledRunStates: tally([...cancelledStates(history).values()]),
      runsUnknownByReason: tally(
        runs.filter((run) => run.state === "unknown").map((run) => run.endReason ?? "unspecified"),
      ),
      runsPendingBeforeDeadline: runs.filter(
        (run) => run.state === "pending" && deadlineOf(run, deadlines) >= history.readAt,
      ).length,
      uncertainPlaybacks: uncertainPlaybacks(history),
      outboxStates: tally(
        history.outbox.map(({ entry }) => `${entry.state}${entry.reason ? `/${entry.reason}` : ""}`),
      ),
      unansweredInputs: unansweredInputs(history),
      rejectionsByReason: tally(
        history.rejections.map(({ record }) => String(record.reason ?? "unspecified")),
      ),
      deadLetters: Object.fromEntries(history.deadLetters.map(({ stream, entries }) => [stream, entries])),
    },
  };
}

/**
 * Two playback.start of one result that are not explicit repeats, or one playback delivered twice. The kind of a
 * playback comes from the OS store (`B:playback:<id>`), not from what the Lamp believes it asked for.
 */
function duplicateUtterances(history: CampaignHistory): Violation[] {
  const byPlayback = groupBy(history.received, (p) => `${p.deviceId}|${p.playbackId}`);
  const answers = groupBy(
    history.received.filter((p) => kindOf(history, p.deviceId, p.playbackId) !== "repeat"),
    (p) => `${p.deviceId}|${p.resultId}`,
  );
  const violations: Violation[] = [];
  for (const [key, frames] of byPlayback)
    if (frames.length > 1)
      violations.push({ invariant: "duplicate utterance", detail: `${key} received ${frames.length} times` });
  for (const [key, frames] of answers) {
    const playbackIds = new Set(frames.map((p) => p.playbackId));
    if (playbackIds.size > 1)
      violations.push({
        invariant: "duplicate utterance",
        detail: `${key} spoken by ${playbackIds.size} non-repeat playbacks: ${[...playbackIds].join(", ")}`,
      });
  }
  return violations;
}

/**
 * A device's answers start on its Lamp in the order the router routed their results: taking each result's first
 * non-repeat playback.start as the Lamp received it, no result starts after one the router routed later. Results
 * that never started (suppressed, failed unsent) or that the campaign did not see routed are not judged.
 */
function answersOutOfRoutingOrder(history: CampaignHistory): Violation[] {
  return history.routingOrder.flatMap(({ deviceId, resultIds }) => {
    const place = new Map(resultIds.map((resultId, index) => [resultId, index]));
    const started = new Set<string>();
    let latest: { resultId: string; place: number } | undefined;
    const violations: Violation[] = [];
    for (const start of history.received) {
      if (start.deviceId !== deviceId || started.has(start.resultId)) continue;
      if (kindOf(history, deviceId, start.playbackId) === "repeat") continue;
      started.add(start.resultId);
      const routed = place.get(start.resultId);
      if (routed === undefined) continue;
      if (latest !== undefined && routed < latest.place)
        violations.push({
          invariant: "answer started out of routing order",
          detail: `${deviceId}: ${start.resultId} (routed #${routed + 1}) started after ${latest.resultId} (routed #${latest.place + 1})`,
        });
      if (latest === undefined || routed > latest.place) latest = { resultId: start.resultId, place: routed };
    }
    return violations;
  });
}

/** A Harness result whose members are OS runs, but which did not resolve them. */
function lostResults(history: CampaignHistory): Violation[] {
  const runByKey = new Map(history.runs.map((run) => [`${run.deviceId}|${run.idempotencyKey}`, run]));
  return history.harnessResults.flatMap(({ deviceId, payload }) => {
    const members = payload.correlation.inputs.map((member) => ({
      member,
      run: runByKey.get(`${deviceId}|${member.idempotencyKey}`),
    }));
    const unresolved = members.filter(
      ({ run }) => run !== undefined && !(run.state === "resolved" && run.resultId === payload.resultId),
    );
    if (unresolved.length === 0) return [];
    const states = unresolved.map(({ run }) => `${run?.runId}:${run?.state}:${run?.resultId ?? "-"}`);
    return [
      {
        invariant: "lost result" as const,
        detail: `${deviceId} result ${payload.resultId} (${payload.outcome}) did not resolve ${states.join(", ")}`,
      },
    ];
  });
}

/** A resolved run must be listed by its result, on both sides. */
function resolvedUnlisted(history: CampaignHistory): Violation[] {
  const harness = new Map(
    history.harnessResults.map((r) => [`${r.deviceId}|${r.payload.resultId}`, r.payload]),
  );
  const os = new Map(history.osResults.map((r) => [`${r.deviceId}|${r.resultId}`, r]));
  return history.runs.flatMap((run) => {
    if (run.state !== "resolved") return [];
    const key = `${run.deviceId}|${run.resultId}`;
    const listedByHarness = harness
      .get(key)
      ?.correlation.inputs.some(
        (m) => m.idempotencyKey === run.idempotencyKey && m.deliveryId === run.deliveryId,
      );
    const listedByOs = os.get(key)?.members.some((m) => m.runId === run.runId);
    if (listedByHarness && listedByOs) return [];
    return [
      {
        invariant: "run resolved that no result listed" as const,
        detail: `${run.deviceId} run ${run.runId} resolved by ${run.resultId} (harness lists it: ${Boolean(
          listedByHarness,
        )}, OS lists it: ${Boolean(listedByOs)})`,
      },
    ];
  });
}

/** The same deliveryId written to an engine more than once (our chaos engines never refuse a steer). */
function inputsSentTwice(history: CampaignHistory): Violation[] {
  const writes = groupBy(history.engineWrites, (w) => `${w.agentId}|${w.deliveryId}`);
  return [...writes]
    .filter(([, frames]) => frames.length > 1)
    .map(([key, frames]) => ({
      invariant: "input sent twice to an engine" as const,
      detail: `${key} written ${frames.length} times (${frames.map((f) => f.frame).join(", ")})`,
    }));
}

/**
 * Every run ends (resolved or unknown) by `voiceTargetExpiresAt + grace + settle`. When it ended is the `at` of the
 * first run.update in a terminal state (as a Lamp received it, or as the device's log keeps it), else `resolvedAt`;
 * a pending run is judged only once its deadline has passed.
 */
function runsPastDeadline(history: CampaignHistory, deadlines: RunDeadlines): Violation[] {
  const ends = runEnds(history);
  return history.runs.flatMap((run) => {
    const deadline = deadlineOf(run, deadlines);
    const endedAt =
      run.state === "pending" ? undefined : (ends.get(`${run.deviceId}|${run.runId}`) ?? run.resolvedAt);
    const late =
      run.state === "pending" ? history.readAt > deadline : endedAt !== undefined && endedAt > deadline;
    if (!late) return [];
    const when =
      run.state === "pending"
        ? `still pending ${history.readAt - deadline} ms after its deadline`
        : `ended ${run.state}${run.endReason ? `/${run.endReason}` : ""} ${(endedAt ?? 0) - deadline} ms after its deadline`;
    return [
      {
        invariant: "run not ended by its deadline" as const,
        detail: `${run.deviceId} run ${run.runId} (target expired ${new Date(run.voiceTargetExpiresAt).toISOString()}) ${when}`,
      },
    ];
  });
}

function deadlineOf(run: RunRecord, deadlines: RunDeadlines): number {
  return run.voiceTargetExpiresAt + deadlines.graceMs + deadlines.settleMs;
}

/** deviceId|runId → the earliest moment a run.update reported the run resolved or unknown. */
function runEnds(history: CampaignHistory): Map<string, number> {
  const ends = new Map<string, number>();
  const note = (deviceId: string, runId: string, state: string, at: number) => {
    if (state === "pending") return;
    const key = `${deviceId}|${runId}`;
    ends.set(key, Math.min(at, ends.get(key) ?? at));
  };
  for (const { deviceId, feed } of history.lampFeeds)
    for (const event of feed)
      if (event.kind === "update")
        note(deviceId, event.update.runId, event.update.state, Date.parse(event.update.at));
  for (const { deviceId, entries } of history.updateLogs)
    for (const { record } of entries) note(deviceId, record.runId, record.state, record.at);
  return ends;
}

/**
 * Two processes stamp `cancelledAt` and `sendingAt` before their scripts run, so close stamps do not say which
 * script ran first; a claim this much later than the cancel did run after it.
 */
const CLAIM_AFTER_CANCEL_ALLOWANCE_MS = 1_000;

/**
 * Nothing is spoken for a cancelled run: an answer or failure notice whose owning run (the newest member, whose
 * route speaks; a single-member result's only run) was cancelled before the playback was claimed for sending must
 * never reach the Lamp. A cancel whose run.update saw the run still pending ran before the result was even stored;
 * a later one is judged by the claim's stamp. A playback claimed before the cancel may already be playing.
 */
function cancelledSpoken(history: CampaignHistory): Violation[] {
  const runs = new Map(history.runs.map((run) => [`${run.deviceId}|${run.runId}`, run]));
  const results = new Map(
    history.osResults.map((result) => [`${result.deviceId}|${result.resultId}`, result]),
  );
  const stateAtCancel = cancelledStates(history);
  return history.playbacks.flatMap(({ deviceId, record }) => {
    if (record.kind === "repeat") return [];
    const members = results.get(`${deviceId}|${record.resultId}`)?.members ?? [];
    const ownerId = record.newestRunId ?? (members.length === 1 ? members[0]?.runId : undefined);
    const owner = ownerId === undefined ? undefined : runs.get(`${deviceId}|${ownerId}`);
    if (owner?.cancelledAt === undefined) return [];
    const cancelledWhilePending = stateAtCancel.get(`${deviceId}|${owner.runId}`) === "pending";
    const claimedAfterCancel =
      record.sendingAt !== undefined &&
      record.sendingAt > owner.cancelledAt + CLAIM_AFTER_CANCEL_ALLOWANCE_MS;
    if (!cancelledWhilePending && !claimedAfterCancel) return [];
    const spoken = history.received.filter(
      (p) => p.deviceId === deviceId && p.playbackId === record.playbackId,
    );
    if (spoken.length === 0) return [];
    return [
      {
        invariant: "cancelled run spoken" as const,
        detail:
          `${deviceId} ${record.kind} ${record.playbackId} of result ${record.resultId} reached the Lamp ` +
          `${spoken.length}× though run ${owner.runId} was cancelled at ${owner.cancelledAt} ` +
          `(${cancelledWhilePending ? "while pending" : "after its result"}; claimed for sending at ` +
          `${record.sendingAt ?? "never"}, state ${record.state})`,
      },
    ];
  });
}

/** deviceId|runId → the run's state in its first `cancelled` run.update (Lamp-received or in the device's log). */
function cancelledStates(history: CampaignHistory): Map<string, string> {
  const states = new Map<string, string>();
  const note = (deviceId: string, update: { runId: string; change: string; state: string }) => {
    const key = `${deviceId}|${update.runId}`;
    if (update.change === "cancelled" && !states.has(key)) states.set(key, update.state);
  };
  for (const { deviceId, entries } of history.updateLogs)
    for (const { record } of entries) note(deviceId, record);
  for (const { deviceId, feed } of history.lampFeeds)
    for (const event of feed) if (event.kind === "update") note(deviceId, event.update);
  return states;
}

/** Each uncertain playback with what the Lamp side knows about why no ack arrived. */
function uncertainPlaybacks(history: CampaignHistory): UncertainPlayback[] {
  return history.playbacks
    .filter(({ record }) => record.state === "uncertain")
    .map(({ deviceId, record }) => {
      const got = history.received.filter(
        (p) => p.deviceId === deviceId && p.playbackId === record.playbackId,
      );
      const reason = record.reason ?? "unspecified";
      return {
        deviceId,
        playbackId: record.playbackId,
        resultId: record.resultId,
        reason,
        cause: causeOf(
          reason,
          got.map((p) => p.ack),
        ),
      };
    });
}

function causeOf(reason: string, acks: string[]): string {
  if (reason === "send_interrupted") return "tts-dispatcher died between claim and ack: never sent again";
  if (acks.length === 0) return "playback.start never reached the Lamp (connection dropped or gateway down)";
  if (acks.includes("never")) return "Lamp received it and withheld the ack (fault)";
  if (acks.includes("late")) return "Lamp acked late and the ack was lost with its connection";
  return "Lamp acked at once but the ack was lost (connection dropped or OS side down)";
}

function unansweredInputs(history: CampaignHistory): Record<string, number> {
  const receipts = new Map(
    history.receipts.map(({ deviceId, receipt }) => [`${deviceId}|${receipt.idempotencyKey}`, receipt]),
  );
  return tally(
    history.runs
      .filter((run) => run.state !== "resolved")
      .map((run) => {
        const receipt = receipts.get(`${run.deviceId}|${run.idempotencyKey}`);
        if (!receipt) return `${run.state}: no receipt${run.sendError ? ` (${run.sendError})` : ""}`;
        return `${run.state}: receipt ${receipt.state}${receipt.error ? `/${receipt.error.code}` : ""}`;
      }),
  );
}

function kindOf(history: CampaignHistory, deviceId: string, playbackId: string): string | undefined {
  return history.playbacks.find((p) => p.deviceId === deviceId && p.record.playbackId === playbackId)?.record
    .kind;
}

function groupBy<T>(items: T[], keyOf: (item: T) => string): Map<string, T[]> {
  const groups = new Map<string, T[]>();
  for (const item of items) groups.set(keyOf(item), [...(groups.get(keyOf(item)) ?? []), item]);
  return groups;
}

function tally(values: string[]): Record<string, number> {
  const counts: Record<string, number> = {};
  for (const value of values) counts[value] = (counts[value] ?? 0) + 1;
  return counts;
}
