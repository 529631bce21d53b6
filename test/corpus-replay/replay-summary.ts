import type { HarnessEvidence } from "../../libs/contract/pipeline-payloads.js";
import type { ExpectedReplay } from "./expectations.js";
import type { ReplayInput } from "./t3code-records.js";

/** Evidence in the expectation table's terms: inputs by label, fullText cut to the expected prefix length. */
export interface ReplaySummary {
  results: { members: string[]; outcome: string; correlation: string; text: string }[];
  unknown?: { members: string[]; reason: string }[];
  stops?: string[];
}

export function summarize(
  evidence: HarnessEvidence[],
  inputs: ReplayInput[],
  expected: ExpectedReplay,
): ReplaySummary {
  const label = (deliveryId: string) =>
    inputs.find((input) => input.deliveryId === deliveryId)?.label ?? deliveryId;
  const completed = evidence.flatMap((entry) => (entry.kind === "turn.completed" ? [entry] : []));
  const results = completed.map((entry, index) => {
    const prefix = expected.results[index]?.text ?? "";
    const correlations = [...new Set(entry.members.map((member) => member.correlation))];
    return {
      members: entry.members.map((member) => label(member.deliveryId)),
      outcome: entry.outcome,
      correlation: correlations.join("+"),
      text: prefix === "" ? entry.fullText : entry.fullText.slice(0, prefix.length),
    };
  });
  const unknown = evidence.flatMap((entry) =>
    entry.kind === "evidence.missing"
      ? [{ members: entry.members.map((member) => label(member.deliveryId)), reason: entry.reason }]
      : [],
  );
  const stops = evidence.flatMap((entry) =>
    entry.kind === "stop.confirmed" ? [label(entry.deliveryId)] : [],
  );
  return { results, ...(unknown.length > 0 ? { unknown } : {}), ...(stops.length > 0 ? { stops } : {}) };
}
