import type { OsRouted } from "../../libs/contract/pipeline-payloads.js";
import { resultKeyOf } from "../../libs/os-store/os-keys.js";
import type { RunRecord } from "../../libs/os-store/run-record.js";
import { resultContentHash } from "./result-identity.js";
import type { MemberRun, RouterStore } from "./router-store.js";
import { reject, type EventOrigin, type ResultClaim, type Verdict } from "./verdict.js";

type MemberFinding = { found: "run"; run: RunRecord } | { found: "unbound"; run: RunRecord } | Verdict;

/**
 * Resolves every member of a claimed result to a run of this device, by the exact pair (deliveryId, key): no
 * fallback to the agent or the latest run. Any explicit mismatch rejects the whole event; members whose receipt
 * has not bound yet make it wait; only when every member checks out is the result routed.
 */
export async function resolveMembers(
  store: RouterStore,
  claim: ResultClaim,
  origin: EventOrigin,
  now: number,
): Promise<Verdict> {
  const resultKey = resultKeyOf(claim.serverInstanceId, claim.resultId);
  const members: OsRouted["members"] = [];
  let unbound = 0;
  const runs = await store.memberRuns(claim.members);
  for (const [index, member] of claim.members.entries()) {
    const finding = findMember(member, runs[index]);
    if ("verdict" in finding) return { ...finding, ...identityOf(claim) };
    const problem = mismatchOf(finding.run, claim, origin, resultKey, finding.found === "run");
    if (problem) return problem;
    if (finding.found === "unbound") unbound += 1;
    members.push({ runId: finding.run.runId, ...member });
  }
  if (unbound > 0) return { verdict: "wait", detail: `${unbound} member receipt(s) not bound yet` };
  return { verdict: "route", routed: routedOf(store, claim, origin, members, now) };
}

function findMember(member: ResultClaim["members"][number], named: MemberRun | undefined): MemberFinding {
  const run = named?.run;
  if (named?.via === "delivery") {
    if (!run) return reject("UNKNOWN_MEMBER", `delivery ${member.deliveryId} names no run`);
    if (run.idempotencyKey !== member.idempotencyKey)
      return reject("KEY_MISMATCH", `delivery ${member.deliveryId} belongs to another key`);
    return { found: "run", run };
  }
  if (!run) return reject("UNKNOWN_MEMBER", `no run of this device has key ${member.idempotencyKey}`);
  if (run.deliveryId === undefined) return { found: "unbound", run };
  return reject("DELIVERY_MISMATCH", `key ${member.idempotencyKey} is bound to another delivery`);
}

function mismatchOf(
  run: RunRecord,
  claim: ResultClaim,
  origin: EventOrigin,
  resultKey: string,
  bound: boolean,
): Verdict | undefined {
  const identity = identityOf(claim);
  if (run.agentId !== origin.agentId)
    return reject("AGENT_MISMATCH", `run ${run.runId} belongs to agent ${run.agentId}`, identity);
  if (bound && run.serverInstanceId !== claim.serverInstanceId)
    return reject("INSTANCE_MISMATCH", `run ${run.runId} was received by another instance`, identity);
  // A run claimed for another result is taken; one claimed for this very result is a replay, routed again so a
  // crash before the first routing is repaired (the claim step decides; the resolver dedupes).
  const claimedFor = run.routedAs ?? run.resultKey;
  if (claimedFor !== undefined && claimedFor !== resultKey)
    return reject("MEMBER_NOT_PENDING", `run ${run.runId} is claimed by result ${claimedFor}`, identity);
  if (run.state !== "pending" && claimedFor !== resultKey)
    return reject("MEMBER_NOT_PENDING", `run ${run.runId} is ${run.state}`, identity);
  return undefined;
}

function routedOf(
  store: RouterStore,
  claim: ResultClaim,
  origin: EventOrigin,
  members: OsRouted["members"],
  now: number,
): OsRouted {
  return {
    deviceId: store.device.deviceId,
    agentId: origin.agentId,
    machineId: origin.machineId,
    serverInstanceId: claim.serverInstanceId,
    resultId: claim.resultId,
    outcome: claim.outcome,
    fullText: claim.fullText,
    engineTurnId: claim.engineTurnId,
    members,
    contentHash: resultContentHash(claim),
    source: {
      wireKind: claim.wireKind,
      transportInstanceId: origin.transportInstanceId,
      eventId: origin.eventId,
    },
    routedAt: now,
  };
}

const identityOf = (claim: ResultClaim) => ({
  serverInstanceId: claim.serverInstanceId,
  resultId: claim.resultId,
});
