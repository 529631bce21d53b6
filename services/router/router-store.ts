import type { RedisClient } from "../../libs/redis/redis-client.js";
import { RecentMap } from "../../libs/collections/recent-map.js";
import { z } from "zod";
import type { Receipt } from "../../libs/contract/receipt.js";
import { EXPIRED_HELD_KEPT, type ExpiredHeldResult } from "../../libs/os-store/expired-held-result.js";
import { heldResultSchema, type HeldResult } from "../../libs/os-store/held-result.js";
import type { OsDeviceKeys } from "../../libs/os-store/os-keys.js";
import type { ProtocolErrorRecord, RejectionRecord } from "../../libs/contract/os-audit-records.js";
import { parseRunRecord, type RunRecord } from "../../libs/os-store/run-record.js";
import { luaList } from "../../libs/redis/lua-list.js";
import { NamedLuaScript } from "../../libs/redis/lua-script.js";

const bindOutcomeSchema = z.enum([
  "bound",
  "refreshed",
  "stale",
  "unknown_key",
  "agent_mismatch",
  "conflict",
]);
export type BindOutcome = z.infer<typeof bindOutcomeSchema>;

const bindReply = z.object({ outcome: bindOutcomeSchema, runId: z.string().min(1).optional() });
const bindReceiptScript = NamedLuaScript.fromFile<
  {
    idempotencyKey: string;
    agentId: string;
    deliveryId: string;
    serverInstanceId: string;
    receiptState: Receipt["state"];
    receipt: Receipt;
    now: number;
    runIdHint?: string;
    command?: { entryId: string; group: string };
  },
  typeof bindReply
>(new URL("./lua/bind-receipt-1.lua", import.meta.url), bindReply);

const memberRunsReply = z.object({
  members: z.array(
    z
      .object({
        found: z.boolean(),
        via: z.enum(["delivery", "key"]).optional(),
        run: z.record(z.string(), z.string()).optional(),
      })
      .transform(({ via, run }): MemberRun => ({ via, run: parseRunRecord(run ?? {}) })),
  ),
});
const memberRunsScript = NamedLuaScript.fromFile<
  { members: { deliveryId: string; idempotencyKey: string }[] },
  typeof memberRunsReply
>(new URL("./lua/member-runs-1.lua", import.meta.url), memberRunsReply);

const claimReply = z.discriminatedUnion("outcome", [
  z.object({ outcome: z.enum(["claimed", "replayed"]) }),
  z.object({ outcome: z.literal("content_changed"), claimedHash: z.string().min(1) }),
  z.object({
    outcome: z.literal("member_taken"),
    runId: z.string().min(1),
    state: z.string().min(1),
    routedAs: z.string().min(1).optional(),
  }),
]);
/** What the claim step found: the runs are this result's now, or why they are not. */
export type ClaimOutcome = z.infer<typeof claimReply>;
const claimResultScript = NamedLuaScript.fromFile<
  { leaseOwner: string; resultKey: string; contentHash: string; runIds: string[] },
  typeof claimReply
>(new URL("./lua/claim-result-1.lua", import.meta.url), claimReply);

const stageReply = z.object({ recorded: z.boolean() });
const stageEventScript = NamedLuaScript.fromFile<StageArgs, typeof stageReply>(
  new URL("./lua/stage-event-1.lua", import.meta.url),
  stageReply,
);

/** `ended`: the step ended the run; false when it had already ended (or, for a send, its receipt had bound). */
const endedReply = z.object({ ended: z.boolean() });
const markSendFailedScript = NamedLuaScript.fromFile<
  { runId: string; errorCode: string; now: number },
  typeof endedReply
>(new URL("./lua/mark-send-failed-1.lua", import.meta.url), endedReply);
const endRunScript = NamedLuaScript.fromFile<
  { runId: string; reason: string; now: number },
  typeof endedReply
>(new URL("./lua/end-run-1.lua", import.meta.url), endedReply);

const dueRunsReply = z.object({
  due: luaList(z.string().min(1)),
  nextExpiresAt: z.number().int().optional(),
  held: z.number().int().nonnegative(),
});
const dueRunsScript = NamedLuaScript.fromFile<{ dueBefore: number; limit: number }, typeof dueRunsReply>(
  new URL("./lua/due-runs-1.lua", import.meta.url),
  dueRunsReply,
);

const expireHeldReply = z.object({ expired: z.boolean() });
const expireHeldScript = NamedLuaScript.fromFile<
  { waitingField: string; rejectionJson: string; expiredJson: string; kept: number },
  typeof expireHeldReply
>(new URL("./lua/expire-held-1.lua", import.meta.url), expireHeldReply);

/** What a deadline sweep finds: the due runs, when the next one comes due, and how many results are held. */
export interface DueRuns {
  due: string[];
  /** voiceTargetExpiresAt of the earliest indexed run not yet due; undefined when there is none. */
  nextExpiresAt?: number | undefined;
  held: number;
}

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
  | { action: "routed"; waitingField?: string | undefined }
  | { action: "reject"; waitingField?: string | undefined; rejectionId: string; rejection: RejectionRecord }
  | {
      action: "protocol_error";
      waitingField?: string | undefined;
      protocolErrorId: string;
      protocolError: ProtocolErrorRecord;
    }
  | { action: "wait"; waitingField: string; waitingJson: string }
  | { action: "ignore" }
  | { action: "resync" };

/** The stage step's arguments: the action's fields, records as JSON text (kept byte for byte). */
type StageArgs = { leaseOwner: string; action: StageAction["action"]; cursor?: CursorMove } & {
  waitingField?: string;
  waitingJson?: string;
  rejectionId?: string;
  rejectionJson?: string;
  protocolErrorId?: string;
  protocolErrorJson?: string;
};

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
    const found = await memberRunsScript.run(this.redis, [this.device.base], {
      members: members.map(({ deliveryId, idempotencyKey }) => ({ deliveryId, idempotencyKey })),
    });
    return found.members;
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
    return dueRunsScript.run(this.redis, [this.device.base], { dueBefore, limit });
  }

  /** Ends a still-pending run `unknown` with `reason`; false when it had already ended. */
  async endRun(runId: string, reason: string, now: number): Promise<boolean> {
    return (await endRunScript.run(this.redis, [this.device.base], { runId, reason, now })).ended;
  }

  /** Gives up a held result (rejection recorded, frame kept in `B:held-expired`); false when no longer held. */
  async expireHeld(expired: ExpiredHeldResult, rejection: RejectionRecord): Promise<boolean> {
    const reply = await expireHeldScript.run(this.redis, [this.device.base], {
      waitingField: expired.id,
      rejectionJson: JSON.stringify(rejection),
      expiredJson: JSON.stringify(expired),
      kept: EXPIRED_HELD_KEPT,
    });
    return reply.expired;
  }

  /**
   * Binds a receipt; one that answers a device command (`answered`: its entry in `B:commands` and the group reading
   * it) acks and deletes that entry in the same step.
   */
  async bindReceipt(
    receipt: Receipt,
    answered?: { entryId: string; group: string },
  ): Promise<{ outcome: BindOutcome; runId: string | undefined }> {
    const { idempotencyKey } = receipt;
    const runIdHint = this.knownRuns.get(idempotencyKey);
    const { outcome, runId } = await bindReceiptScript.run(this.redis, [this.device.base], {
      idempotencyKey,
      agentId: receipt.agentId,
      deliveryId: receipt.deliveryId,
      serverInstanceId: receipt.serverInstanceId,
      receiptState: receipt.state,
      receipt,
      now: Date.now(),
      ...(runIdHint === undefined ? {} : { runIdHint }),
      ...(answered === undefined ? {} : { command: answered }),
    });
    if (runId !== undefined) this.knowRun(idempotencyKey, runId);
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
    await markSendFailedScript.run(this.redis, [this.device.base], {
      runId,
      errorCode: code,
      now: Date.now(),
    });
  }

  /**
   * Claims the member runs for a validated result before it is routed (claim-result-1.lua): a run claimed for
   * another result, or no longer pending, and the same identity claimed with other content are answered, not claimed.
   */
  async claimResult(resultKey: string, contentHash: string, runIds: string[]): Promise<ClaimOutcome> {
    return claimResultScript.run(this.redis, [this.device.base], {
      leaseOwner: this.leaseOwner,
      resultKey,
      contentHash,
      runIds,
    });
  }

  /** Returns whether a rejection or protocol error was newly recorded (a replayed event is recorded once). */
  async stage(step: StageAction, move: CursorMove | undefined): Promise<boolean> {
    const reply = await stageEventScript.run(this.redis, [this.device.base], this.stageArgs(step, move));
    return reply.recorded;
  }

  private stageArgs(step: StageAction, move: CursorMove | undefined): StageArgs {
    const args: StageArgs = { leaseOwner: this.leaseOwner, action: step.action };
    if (move !== undefined) args.cursor = move;
    if ("waitingField" in step && step.waitingField !== undefined) args.waitingField = step.waitingField;
    if (step.action === "wait") args.waitingJson = step.waitingJson;
    if (step.action === "reject") {
      args.rejectionId = step.rejectionId;
      args.rejectionJson = JSON.stringify(step.rejection);
    }
    if (step.action === "protocol_error") {
      args.protocolErrorId = step.protocolErrorId;
      args.protocolErrorJson = JSON.stringify(step.protocolError);
    }
    return args;
  }
}
