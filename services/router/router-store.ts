import type { RedisClient } from "../../libs/redis/redis-client.js";
import { RecentMap } from "../../libs/collections/recent-map.js";
import { z } from "zod";
import type { Receipt } from "../../libs/contract/receipt.js";
import { EXPIRED_HELD_KEPT, type ExpiredHeldResult } from "../../libs/os-store/expired-held-result.js";
import { heldResultSchema, type HeldResult } from "../../libs/os-store/held-result.js";
import type { OsDeviceKeys } from "../../libs/os-store/os-keys.js";
import type { RejectionRecord } from "../../libs/os-store/result-record.js";
import { parseRunRecord, type RunRecord } from "../../libs/os-store/run-record.js";
import { flatRecord } from "../../libs/redis/flat-reply.js";
import { LuaScript } from "../../libs/redis/lua-script.js";

const bindOutcomeSchema = z.enum([
  "bound",
  "refreshed",
  "stale",
  "unknown_key",
  "agent_mismatch",
  "conflict",
]);
export type BindOutcome = z.infer<typeof bindOutcomeSchema>;

/** 1 when the step changed something (a rejection newly recorded, a run marked), 0 when it did not. */
const changedSchema = z.union([z.literal(0), z.literal(1)]);

const bindReceiptScript = LuaScript.fromFile(
  new URL("./lua/bind-receipt-1.lua", import.meta.url),
  z.tuple([bindOutcomeSchema, z.string()]),
);
const memberRunsScript = LuaScript.fromFile(
  new URL("./lua/member-runs-1.lua", import.meta.url),
  z.array(
    z
      .tuple([z.enum(["delivery", "key", ""]), z.array(z.string()).transform(flatRecord)])
      .transform(([via, fields]): MemberRun => ({
        via: via === "" ? undefined : via,
        run: parseRunRecord(fields),
      })),
  ),
);
const stageEventScript = LuaScript.fromFile(
  new URL("./lua/stage-event-1.lua", import.meta.url),
  changedSchema,
);
const markSendFailedScript = LuaScript.fromFile(
  new URL("./lua/mark-send-failed-1.lua", import.meta.url),
  changedSchema,
);

const dueRunsScript = LuaScript.fromFile(
  new URL("./lua/due-runs-1.lua", import.meta.url),
  z
    .tuple([z.array(z.string().min(1)), z.number().int(), z.number().int().nonnegative()])
    .transform(([due, nextExpiry, held]) => ({
      due,
      nextExpiresAt: nextExpiry < 0 ? undefined : nextExpiry,
      held,
    })),
);

/** What a deadline sweep finds: the due runs, when the next one comes due, and how many results are held. */
export interface DueRuns {
  due: string[];
  /** voiceTargetExpiresAt of the earliest indexed run not yet due; undefined when there is none. */
  nextExpiresAt: number | undefined;
  held: number;
}
const endRunScript = LuaScript.fromFile(new URL("./lua/end-run-1.lua", import.meta.url), changedSchema);
const expireHeldScript = LuaScript.fromFile(
  new URL("./lua/expire-held-1.lua", import.meta.url),
  changedSchema,
);

/** The run a result member names: found by its delivery's index, else by its key's, else by neither. */
export interface MemberRun {
  via: "delivery" | "key" | undefined;
  /** Undefined when the index names a run whose record is gone. */
  run: RunRecord | undefined;
}

/** A result held in `B:waiting`, under the field it was held as. */
export interface HeldEntry {
  field: string;
  held: HeldResult;
}

export type StageAction =
  | { action: "routed"; waitingField?: string; resultKey: string; routedAt: number }
  | { action: "reject"; waitingField?: string; rejectionId: string; rejection: RejectionRecord }
  | { action: "wait"; waitingField: string; waitingJson: string }
  | { action: "ignore" }
  | { action: "resync" };

/** Where a staged frame moves the resume cursor (absent: re-evaluation of a held result, cursor untouched). */
export interface CursorMove {
  transportInstanceId: string;
  cursor: number;
}

/** Keys whose run a store remembers (the newest ones): a device's runs in flight, with room to spare. */
const KNOWN_RUNS_KEPT = 256;

/** The router's reads and atomic writes on one device's OS store. */
export class RouterStore {
  readonly device: OsDeviceKeys;
  /** idempotencyKey -> runId of the device's recent runs (a hint the binding step checks, never trusts). */
  private readonly knownRuns = new RecentMap<string, string>(KNOWN_RUNS_KEPT);

  constructor(
    private readonly redis: RedisClient,
    device: OsDeviceKeys,
    private readonly leaseOwner: string,
  ) {
    this.device = device;
  }

  async run(runId: string): Promise<RunRecord | undefined> {
    return parseRunRecord(await this.redis.hgetall(this.device.run(runId)));
  }

  async runIdByKey(idempotencyKey: string): Promise<string | null> {
    return this.redis.get(this.device.idempotencyKey(idempotencyKey));
  }

  /** The run each member names (by delivery, else by key), in one round trip for the whole result. */
  async memberRuns(members: readonly { deliveryId: string; idempotencyKey: string }[]): Promise<MemberRun[]> {
    const args = members.flatMap((member) => [member.deliveryId, member.idempotencyKey]);
    return memberRunsScript.run(this.redis, [this.device.base], args);
  }

  async pendingRuns(): Promise<RunRecord[]> {
    const runIds = await this.redis.zrange(this.device.pendingRuns, 0, -1);
    const runs = await Promise.all(runIds.map((runId) => this.run(runId)));
    return runs.filter((run): run is RunRecord => run?.state === "pending");
  }

  async cursor(): Promise<CursorMove | undefined> {
    const [transportInstanceId, cursor] = await this.redis.hmget(
      this.device.cursor,
      "serverInstanceId",
      "cursor",
    );
    if (!transportInstanceId || cursor === null) return undefined;
    return { transportInstanceId, cursor: Number(cursor) };
  }

  async heldResults(): Promise<HeldEntry[]> {
    const waiting = await this.redis.hgetall(this.device.waiting);
    return Object.entries(waiting).map(([field, json]) => ({
      field,
      held: heldResultSchema.parse(JSON.parse(json)),
    }));
  }

  /** Pending runs whose voice target expired before `dueBefore` (at most `limit`), indexing new runs first. */
  async dueRuns(dueBefore: number, limit: number): Promise<DueRuns> {
    return dueRunsScript.run(this.redis, [this.device.base], [dueBefore, limit]);
  }

  /** Ends a still-pending run `unknown` with `reason`; false when it had already ended. */
  async endRun(runId: string, reason: string, now: number): Promise<boolean> {
    return (await endRunScript.run(this.redis, [this.device.base], [runId, reason, now])) === 1;
  }

  /** Gives up a held result (rejection recorded, frame kept in `B:held-expired`); false when no longer held. */
  async expireHeld(expired: ExpiredHeldResult, rejection: RejectionRecord): Promise<boolean> {
    const args = [expired.id, JSON.stringify(rejection), JSON.stringify(expired), EXPIRED_HELD_KEPT];
    return (await expireHeldScript.run(this.redis, [this.device.base], args)) === 1;
  }

  /**
   * Binds a receipt; one that answers a device command (`answered`: its entry in `B:commands` and the group reading
   * it) acks and deletes that entry in the same step.
   */
  async bindReceipt(
    receipt: Receipt,
    answered?: { entryId: string; group: string },
  ): Promise<{ outcome: BindOutcome; runId: string }> {
    const { idempotencyKey } = receipt;
    const [outcome, runId] = await bindReceiptScript.run(
      this.redis,
      [this.device.base],
      [
        idempotencyKey,
        receipt.agentId,
        receipt.deliveryId,
        receipt.serverInstanceId,
        receipt.state,
        JSON.stringify(receipt),
        Date.now(),
        this.knownRuns.get(idempotencyKey) ?? "",
        answered?.entryId ?? "",
        answered?.group ?? "",
      ],
    );
    if (runId !== "") this.knowRun(idempotencyKey, runId);
    return { outcome, runId };
  }

  /** Remembers which run holds a key, so a later binding of its receipt need not read the key index. */
  knowRun(idempotencyKey: string, runId: string): void {
    this.knownRuns.set(idempotencyKey, runId);
  }

  async markSendAttempt(runId: string, transportInstanceId: string): Promise<void> {
    await this.redis.hsetnx(this.device.run(runId), "sentVia", transportInstanceId);
  }

  async markSendFailed(runId: string, code: string): Promise<void> {
    await markSendFailedScript.run(this.redis, [this.device.base], [runId, code, Date.now()]);
  }

  /** Returns whether a rejection was newly recorded (a replayed rejected event is recorded once). */
  async stage(step: StageAction, move: CursorMove | undefined): Promise<boolean> {
    return (await stageEventScript.run(this.redis, [this.device.base], this.stageArgs(step, move))) === 1;
  }

  private stageArgs(step: StageAction, move: CursorMove | undefined): string[] {
    return [
      this.leaseOwner,
      step.action,
      move?.transportInstanceId ?? "",
      move === undefined ? "" : String(move.cursor),
      "waitingField" in step ? (step.waitingField ?? "") : "",
      step.action === "wait" ? step.waitingJson : "",
      step.action === "reject" ? step.rejectionId : "",
      step.action === "reject" ? JSON.stringify(step.rejection) : "",
      step.action === "routed" ? step.resultKey : "",
      step.action === "routed" ? String(step.routedAt) : "",
    ];
  }
}
