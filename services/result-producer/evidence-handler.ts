import { randomUUID } from "node:crypto";
import type { Counter } from "prom-client";
import type { HarnessEvidence } from "../../libs/contract/pipeline-payloads.js";
import type { Logger } from "../../libs/logging/logger.js";
import type { CompletionMarks } from "../../libs/os-store/completion-marks.js";
import type { InstanceIdentity } from "../../libs/harness-store/instance-identity.js";
import type { ProducerConfig } from "./config.js";
import type { DeviceLedger, LedgerEntry } from "./device-ledger.js";
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

/** A ledger entry for one device, with the kind of evidence it came from (for the metrics). */
interface DeviceEntry extends LedgerEntry {
  deviceId: string;
  kind: HarnessEvidence["kind"];
}

/**
 * Turns harness.evidence into receipt transitions, results and device events. The pieces of one read batch are
 * applied per device in one Lua step each, in stream order, keyed by evidenceId, so redelivery changes nothing and
 * emits nothing new; different devices (different slots) are applied side by side.
 */
export class EvidenceHandler {
  constructor(private readonly deps: EvidenceHandlerDeps) {}

  async handle(batch: readonly HarnessEvidence[]): Promise<void> {
    const entries: DeviceEntry[] = [];
    let instance: Promise<string> | undefined;
    // Read once per batch, and only when a result is built.
    const currentInstance = () => (instance ??= this.deps.identity.current());
    for (const evidence of batch) entries.push(...(await this.entriesOf(evidence, currentInstance)));
    await Promise.all(
      [...byDevice(entries)].map(async ([deviceId, owned]) => {
        const answers = await this.deps.ledger.apply(deviceId, owned);
        owned.forEach((entry, index) => {
          const answer = answers[index];
          if (!answer) return;
          this.deps.applied.inc({ kind: entry.kind, status: answer.status });
          if (answer.status === "withheld") this.deps.withheld.inc({ reason: answer.detail });
        });
      }),
    );
  }

  private async entriesOf(
    evidence: HarnessEvidence,
    currentInstance: () => Promise<string>,
  ): Promise<DeviceEntry[]> {
    switch (evidence.kind) {
      case "input.delivered":
        return [single(evidence, "delivered", { mode: evidence.mode })];
      case "input.consumed":
        return [single(evidence, "consumed", { turnId: randomUUID() })];
      case "input.rejected":
        return [
          single(evidence, "rejected", {
            reason: evidence.reason,
            ...(evidence.code === undefined ? {} : { code: evidence.code }),
          }),
        ];
      case "stop.confirmed":
        return [single(evidence, "stop_confirmed", {})];
      case "evidence.missing":
        return unknownOf(evidence, evidence.members, evidence.reason, `evidence missing: ${evidence.reason}`);
      case "turn.completed":
        return this.completeTurn(evidence, currentInstance);
    }
  }

  private async completeTurn(
    evidence: Evidence<"turn.completed">,
    currentInstance: () => Promise<string>,
  ): Promise<DeviceEntry[]> {
    if (new Set(evidence.members.map((member) => member.deviceId)).size > 1)
      // Grouping across owners needs an authorization this contract does not have: withhold the whole result.
      return unknownOf(evidence, evidence.members, "RESULT_OWNER_MIXED", "members belong to several devices");
    const deviceId = evidence.members[0]?.deviceId as string;
    const instance = await currentInstance();
    const resultId = randomUUID();
    const built = buildResultPayload(evidence, instance, resultId);
    const members = evidence.members.map(memberArg);
    const entry = (op: LedgerEntry["op"], args: object): DeviceEntry[] => [
      { deviceId, kind: evidence.kind, op, evidenceId: evidence.evidenceId, args },
    ];
    if (!built.ok) {
      this.deps.log.warn({ evidenceId: evidence.evidenceId, ...built.withheld }, "result withheld");
      const { code, message } = built.withheld;
      return entry("unknown", { members, code, message });
    }
    // Marked before it is applied: a redelivery after a crash between the two applies nothing new and marks nothing.
    await this.deps.completions.record(instance, resultId, evidence.observedAt);
    return entry("result", {
      members,
      resultId,
      payload: built.bytes,
      agentId: evidence.agentId,
      machineId: evidence.machineId,
      outcome: evidence.outcome,
      scope: built.members.length === 1 ? "input" : "group",
      resultCapacity: this.deps.config.RECEIPT_CAPACITY,
    });
  }
}

function single(
  evidence: Evidence<"input.delivered" | "input.consumed" | "input.rejected" | "stop.confirmed">,
  op: "delivered" | "consumed" | "rejected" | "stop_confirmed",
  extra: object,
): DeviceEntry {
  return {
    deviceId: evidence.deviceId,
    kind: evidence.kind,
    op,
    evidenceId: evidence.evidenceId,
    args: { key: evidence.idempotencyKey, deliveryId: evidence.deliveryId, ...extra },
  };
}

/** The members' receipts end `unknown` with `code`: one entry per device they belong to. */
function unknownOf(
  evidence: HarnessEvidence,
  members: readonly MemberRef[],
  code: string,
  message: string,
): DeviceEntry[] {
  return [...byDevice(members)].map(([deviceId, owned]) => ({
    deviceId,
    kind: evidence.kind,
    op: "unknown",
    evidenceId: evidence.evidenceId,
    args: { members: owned.map(memberArg), code, message },
  }));
}

function byDevice<T extends { deviceId: string }>(items: readonly T[]): Map<string, T[]> {
  const grouped = new Map<string, T[]>();
  for (const item of items) grouped.set(item.deviceId, [...(grouped.get(item.deviceId) ?? []), item]);
  return grouped;
}

const memberArg = (member: MemberRef) => ({ key: member.idempotencyKey, deliveryId: member.deliveryId });
