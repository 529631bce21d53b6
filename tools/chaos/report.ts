import type { Deployment, FaultKind } from "./campaign-plan.js";
import type { CampaignOutcome } from "./campaign.js";

const MAX_LISTED_VIOLATIONS = 30;

/** The campaign's figures, invariants and fault schedule as plain text. */
export function formatReport(outcome: CampaignOutcome): string {
  const { plan, traffic, verdict } = outcome;
  const f = verdict.figures;
  const invariant = (name: string, value: number) =>
    `  ${name.padEnd(44)} ${value}${value === 0 ? "" : "  FAIL"}`;
  const lines = [
    `fault campaign — seed ${plan.seed}, --results ${plan.results}${plan.deployment.clusterMasters ? " --cluster" : ""}`,
    `  on ${formatDeployment(plan.deployment)}`,
    `  ${plan.devices.length} lamps, ${plan.agents.length} agents (${plan.agents.map((a) => a.agentId).join(", ")})`,
    `  duration ${(outcome.durationMs / 1000).toFixed(1)} s, drain ${(outcome.drain.drainedMs / 1000).toFixed(1)} s` +
      (outcome.drain.quiet ? "" : " (still busy at the drain deadline)"),
    "",
    "traffic",
    `  turns ${plan.turns.length}, inputs sent ${f.inputsSent} (fillers ${traffic.fillers}), ` +
      `turns not settled in time ${traffic.turnsTimedOut}, repeats asked ${traffic.repeatsAsked}`,
    `  voice requests never registered by the OS ${traffic.unregistered.length}`,
    `  cancels sent ${traffic.cancels.length}: ${formatCounts(f.cancels)}`,
    `  lamp outages ${outages(outcome).length}` +
      (outages(outcome).length === 0
        ? ""
        : ` (${outages(outcome)
            .map((o) => `${o.deviceId} ${(o.downMs / 1000).toFixed(0)} s ${o.ending}`)
            .join(", ")})`),
    ...traffic.unregistered.slice(0, 5).map((detail) => `    ${detail}`),
    "",
    "figures",
    `  results produced (Harness side)              ${f.resultsProduced} (group results ${f.groupResults})`,
    `  results stored by the OS                     ${f.resultsStoredByOs}`,
    `  results spoken (distinct, playback.start)    ${f.resultsSpoken}`,
    `  playback.start received / explicit repeats   ${f.playbackStartsReceived} / ${f.explicitRepeatsSpoken}`,
    `  runs: resolved / pending / unknown           ${f.runsResolved} / ${f.runsPending} / ${f.runsUnknown} of ${f.runs}`,
    `  runs ended unknown, by reason                ${formatCounts(f.runsUnknownByReason)}`,
    `  runs pending, deadline still ahead           ${f.runsPendingBeforeDeadline}`,
    `  cancelled runs, by state at the cancel       ${formatCounts(f.cancelledRunStates)}`,
    `  run.updates received / distinct              ${f.runUpdatesReceived} / ${f.distinctRunUpdates}`,
    `  run.updates_since answered / truncated / refused ${f.replaysAnswered} / ${f.replaysTruncated} / ${f.replaysRefused}`,
    `  uncertain playbacks                          ${f.uncertainPlaybacks.length}`,
    ...Object.entries(tally(f.uncertainPlaybacks.map((u) => `${u.reason}: ${u.cause}`))).map(
      ([cause, n]) => `    ${n} × ${cause}`,
    ),
    `  outbox states                                ${formatCounts(f.outboxStates)}`,
    `  inputs without a result                      ${formatCounts(f.unansweredInputs)}`,
    `  OS rejections                                ${formatCounts(f.rejectionsByReason)}`,
    `  dead-lettered stream entries                 ${formatCounts(f.deadLetters)}`,
    "",
    "invariants (must be 0)",
    invariant("duplicate utterances", f.duplicateUtterances),
    invariant("lost results", f.lostResults),
    invariant("runs resolved that no result listed", f.resolvedUnlisted),
    invariant("inputs sent twice to an engine", f.inputsSentTwice),
    invariant("protocol errors (same resultId, other content)", f.protocolErrors),
    invariant("runs not ended by their deadline", f.runsPastDeadline),
    invariant("run.updates sent to another device", f.foreignRunUpdates),
    invariant("run.updates out of order or missing", f.brokenFeeds),
    invariant("cancelled runs spoken", f.cancelledSpoken),
    invariant("malformed frames to a Lamp", f.malformedFrames),
    invariant("answers out of routing order", f.answersOutOfOrder),
    "",
    `fault schedule (${outcome.faults.length} applied): ${formatCounts(faultKinds(outcome))}`,
    ...outcome.faults.map(
      (fault) => `  #${fault.index} t=${(fault.firedAt / 1000).toFixed(1)}s ${fault.description}`,
    ),
    `unplanned service exits (restarted by the supervisor): ${outcome.unplannedExits.length}`,
    ...outcome.unplannedExits.map(
      (exit) =>
        `  ${exit.service}${exit.replica === 0 ? "" : `#${exit.replica}`} at t=${(exit.at / 1000).toFixed(1)}s`,
    ),
  ];
  if (verdict.violations.length > 0) {
    lines.push("", `violations (${verdict.violations.length})`);
    for (const violation of verdict.violations.slice(0, MAX_LISTED_VIOLATIONS))
      lines.push(`  ${violation.invariant}: ${violation.detail}`);
  }
  return lines.join("\n");
}

/** The planned schedule, one line per fault (printed before the run, so a seed's schedule can be read up front). */
function faultKinds(outcome: CampaignOutcome): Record<string, number> {
  const kinds = outcome.plan.faults.filter((fault) => outcome.faults.some((a) => a.index === fault.index));
  return tally(kinds.map((fault) => fault.action.kind satisfies FaultKind));
}

/** The long outages that were applied. */
function outages(outcome: CampaignOutcome) {
  return outcome.plan.faults.flatMap((fault) =>
    fault.action.kind === "lamp-outage" && outcome.faults.some((a) => a.index === fault.index)
      ? [fault.action]
      : [],
  );
}

function formatCounts(counts: Record<string, number>): string {
  const entries = Object.entries(counts).sort(([a], [b]) => a.localeCompare(b));
  return entries.length === 0 ? "none" : entries.map(([key, n]) => `${key} ${n}`).join(", ");
}

function tally(values: string[]): Record<string, number> {
  const counts: Record<string, number> = {};
  for (const value of values) counts[value] = (counts[value] ?? 0) + 1;
  return counts;
}

function formatDeployment(deployment: Deployment): string {
  const redis = deployment.clusterMasters
    ? `a Redis Cluster of ${deployment.clusterMasters} masters`
    : "one redis-server";
  const replicas = Object.entries(deployment.replicas).map(([name, count]) => `${name} ×${count}`);
  return replicas.length === 0 ? redis : `${redis}; replicas: ${replicas.join(", ")}`;
}
