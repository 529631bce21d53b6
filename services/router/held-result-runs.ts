import type { HeldResult } from "../../libs/os-store/held-result.js";
import { isLegacySummary, legacySummaryRun } from "./legacy-summary.js";
import { isVerdict, readCorrelatedClaim } from "./result-claim.js";
import type { RouterStore } from "./router-store.js";

/**
 * The local runs a held result waits for, read the way the router read the frame when it held it: a correlated
 * result's member keys, or the one run a legacy summary names. Keys that name no run of the device are left out.
 */
export async function runsNamedBy(store: RouterStore, held: HeldResult): Promise<string[]> {
  if (isLegacySummary(held.frame, held.origin.kind)) {
    const run = await legacySummaryRun(store, held.frame);
    return run ? [run.runId] : [];
  }
  const claim = readCorrelatedClaim(held.frame);
  if (isVerdict(claim)) return [];
  const runIds = await Promise.all(claim.members.map((member) => store.runIdByKey(member.idempotencyKey)));
  return runIds.filter((runId): runId is string => runId !== null);
}
