import { randomUUID } from "node:crypto";
import type { Counter } from "prom-client";
import type { HarnessEvidence } from "../../libs/contract/streams.js";
import type { Logger } from "../../libs/logging/logger.js";
import type { CompletionMarks } from "../../libs/metrics/completion-marks.js";
import type { InstanceIdentity } from "../../libs/harness-store/instance-identity.js";
import type { ProducerConfig } from "./config.js";
import type { DeviceLedger, LedgerAnswer } from "./device-ledger.js";
import { buildResultPayload } from "./result-payload.js";

type Evidence<K extends HarnessEvidence["kind"]> = Extract<HarnessEvidence, { kind: K }>;
type MemberRef = { deviceId: string; idempotencyKey: string; deliveryId: string };

export interface EvidenceHandlerDeps {
  ledger: DeviceLedger;
  identity: InstanceIdentity;
  config: ProducerConfig;
  log: Logger;
  applied: Counter<"kind" | "status">;
  withheld: Counter<"reason">;
  completions: CompletionMarks;
}

/**
 * Turns one piece of harness.evidence into receipt transitions, results and device events. Every step is one
 * Lua call per device slot, keyed by evidenceId, so redelivery changes nothing and emits nothing new.
 */
export class EvidenceHandler {
  constructor(private readonly deps: EvidenceHandlerDeps) {}

  async handle(evidence: HarnessEvidence): Promise<void> {
    const answers = await this.apply(evidence);
    for (const answer of answers) {
      this.deps.applied.inc({ kind: evidence.kind, status: answer.status });
      if (answer.status === "withheld") this.deps.withheld.inc({ reason: answer.detail });
    }
  }

  private apply(evidence: HarnessEvidence): Promise<LedgerAnswer[]> {
    switch (evidence.kind) {
      case "input.delivered":
        return this.single(evidence, "delivered", { mode: evidence.mode });
      case "input.consumed":
        return this.single(evidence, "consumed", { turnId: randomUUID() });
      case "input.rejected":
        return this.single(evidence, "rejected", {
          reason: evidence.reason,
          ...(evidence.code === undefined ? {} : { code: evidence.code }),
        });
      case "stop.confirmed":
        return this.single(evidence, "stop_confirmed", {});
      case "evidence.missing":
        return this.markUnknown(
          evidence,
          evidence.members,
          evidence.reason,
          `evidence missing: ${evidence.reason}`,
        );
      case "turn.completed":
        return this.completeTurn(evidence);
    }
  }

  private async single(
    evidence: Evidence<"input.delivered" | "input.consumed" | "input.rejected" | "stop.confirmed">,
    op: "delivered" | "consumed" | "rejected" | "stop_confirmed",
    extra: object,
  ): Promise<LedgerAnswer[]> {
    const args = { key: evidence.idempotencyKey, deliveryId: evidence.deliveryId, ...extra };
    return [await this.deps.ledger.apply(evidence.deviceId, op, evidence.evidenceId, args)];
  }

  /** Members grouped per device: one Lua step per device slot. */
  private async markUnknown(
    evidence: HarnessEvidence,
    members: readonly MemberRef[],
    code: string,
    message: string,
  ): Promise<LedgerAnswer[]> {
    const answers: LedgerAnswer[] = [];
    for (const [deviceId, owned] of byDevice(members)) {
      const args = { members: owned.map(memberArg), code, message };
      answers.push(await this.deps.ledger.apply(deviceId, "unknown", evidence.evidenceId, args));
    }
    return answers;
  }

  private async completeTurn(evidence: Evidence<"turn.completed">): Promise<LedgerAnswer[]> {
    const devices = byDevice(evidence.members);
    if (devices.size > 1) {
      // Grouping across owners needs an authorization this contract does not have: withhold the whole result.
      return this.markUnknown(
        evidence,
        evidence.members,
        "RESULT_OWNER_MIXED",
        "members belong to several devices",
      );
    }
    const deviceId = evidence.members[0]?.deviceId as string;
    const resultId = randomUUID();
    const serverInstanceId = await this.deps.identity.current();
    const built = buildResultPayload(evidence, serverInstanceId, resultId);
    if (!built.ok) {
      this.deps.log.warn({ evidenceId: evidence.evidenceId, ...built.withheld }, "result withheld");
      const { code, message } = built.withheld;
      const members = evidence.members.map(memberArg);
      return [
        await this.deps.ledger.apply(deviceId, "unknown", evidence.evidenceId, { members, code, message }),
      ];
    }
    const args = {
      members: evidence.members.map(memberArg),
      resultId,
      payload: built.bytes,
      agentId: evidence.agentId,
      machineId: evidence.machineId,
      outcome: evidence.outcome,
      scope: built.members.length === 1 ? "input" : "group",
      resultCapacity: this.deps.config.RECEIPT_CAPACITY,
    };
    // Marked before it is applied: a redelivery after a crash between the two applies nothing new and marks nothing.
    await this.deps.completions.record(serverInstanceId, resultId, evidence.observedAt);
    return [await this.deps.ledger.apply(deviceId, "result", evidence.evidenceId, args)];
  }
}

function byDevice<M extends MemberRef>(members: readonly M[]): Map<string, M[]> {
  const grouped = new Map<string, M[]>();
  for (const member of members)
    grouped.set(member.deviceId, [...(grouped.get(member.deviceId) ?? []), member]);
  return grouped;
}

const memberArg = (member: MemberRef) => ({ key: member.idempotencyKey, deliveryId: member.deliveryId });
