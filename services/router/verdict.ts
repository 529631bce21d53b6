import type { OsRouted } from "../../libs/contract/pipeline-payloads.js";
import type { Outcome } from "../../libs/contract/turn-result.js";
import type { RejectionReason } from "../../libs/contract/os-audit-records.js";

/** Where a Harness event came from on the transport (the cursor position it occupies). */
export interface EventOrigin {
  transportInstanceId: string;
  eventId: number;
  agentId: string;
  machineId?: string | undefined;
  kind: string;
}

export type WireKind = OsRouted["source"]["wireKind"];

/** A result as the event states it, before its members are resolved to local runs. */
export interface ResultClaim {
  wireKind: WireKind;
  serverInstanceId: string;
  resultId: string;
  outcome: Outcome;
  fullText: string;
  engineTurnId?: string | undefined;
  members: { deliveryId: string; idempotencyKey: string }[];
}

export type Verdict =
  | { verdict: "route"; routed: OsRouted }
  | {
      verdict: "reject";
      reason: RejectionReason;
      detail: string;
      serverInstanceId?: string | undefined;
      resultId?: string | undefined;
    }
  | { verdict: "wait"; detail: string }
  /** The result's identity is already claimed with other content or membership: nothing is applied. */
  | { verdict: "protocol_error"; routed: OsRouted; claimedHash: string };

export const reject = (
  reason: RejectionReason,
  detail: string,
  claim?: Pick<ResultClaim, "serverInstanceId" | "resultId">,
): Verdict => ({
  verdict: "reject",
  reason,
  detail,
  serverInstanceId: claim?.serverInstanceId,
  resultId: claim?.resultId,
});
