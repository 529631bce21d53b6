import { STREAM_CATALOG } from "../../libs/contract/catalog.js";
import type { RedisClient } from "../../libs/redis/redis-client.js";
import { z } from "zod";
import { canonicalHash } from "../../libs/contract/canonical-json.js";
import { receiptUpdatedPayloadSchema, resyncSchema } from "../../libs/contract/harness-wire.js";
import { type OsRouted } from "../../libs/contract/pipeline-payloads.js";
import type { Logger } from "../../libs/logging/logger.js";
import type { HeldResult } from "../../libs/os-store/held-result.js";
import { resultKeyOf } from "../../libs/os-store/os-keys.js";
import type { Keyspace } from "../../libs/redis/keyspace.js";
import { appendToStream } from "../../libs/streams/stream-writer.js";
import type { CrashPoint } from "../../libs/test-support/crash-point.js";
import { isLegacySummary, resolveLegacySummary } from "./legacy-summary.js";
import { resolveMembers } from "./member-resolution.js";
import { isVerdict, readCorrelatedClaim } from "./result-claim.js";
import type { RouterMetrics } from "./router-metrics.js";
import type { CursorMove, RouterStore } from "./router-store.js";
import { reject, type EventOrigin, type Verdict } from "./verdict.js";

const envelopeSchema = z.looseObject({
  type: z.literal("event"),
  eventId: z.number().int().positive(),
  serverInstanceId: z.string().min(1),
  agentId: z.string().min(1),
  machineId: z.string().min(1).optional(),
  kind: z.string().min(1),
  payload: z.record(z.string(), z.unknown()),
});

export interface IntakeHooks {
  /** A receipt bound: held results may now apply. */
  receiptBound(): void;
  /** The Harness changed instance or lost our cursor: reconcile outstanding receipts. */
  resynced(transportInstanceId: string): void;
}

/**
 * Turns each Harness frame of one device session into exactly one durable decision (routed to `os.routed`,
 * rejected, held, bound, or ignored) and only then lets the resume cursor pass it. A store failure throws before the
 * cursor moves, so the frame is replayed after reconnect. A decision that changes a result's fate (routed, rejected,
 * held, resync) moves the cursor in its own step; a receipt binding (idempotent: a stored receipt only moves
 * forward) and a lifecycle frame (nothing to store) leave it owed (`unstaged`), and the session writes it once its
 * queue of frames is idle (`flushCursor`), so a burst of frames costs one cursor write, not one per frame.
 */
export class EventIntake {
  /** Past the last staged frame: where the cursor may move once the frames before it are all decided. */
  private unstaged: CursorMove | undefined;
  /**
   * Whether `B:waiting` may hold results: only this session (the lease holder) adds to it, so once a look found it
   * empty, a receipt binding need not look again until this session holds one.
   */
  private mayHoldResults = true;

  constructor(
    private readonly store: RouterStore,
    private readonly redis: RedisClient,
    private readonly keys: Keyspace,
    private readonly metrics: RouterMetrics,
    private readonly crashPoint: CrashPoint,
    private readonly log: Logger,
    private readonly hooks: IntakeHooks,
  ) {}

  async handleFrame(frame: Record<string, unknown>): Promise<void> {
    if (frame.type === "resync") return this.handleResync(frame);
    if (frame.type !== "event") {
      this.log.warn({ type: frame.type }, "unexpected frame from the harness");
      return;
    }
    const envelope = envelopeSchema.safeParse(frame);
    if (!envelope.success) {
      const verdict = reject("INVALID_EVENT", envelope.error.issues[0]?.message ?? "invalid envelope");
      return this.apply(verdict, frame, undefined, undefined);
    }
    const event = envelope.data;
    const origin: EventOrigin = {
      transportInstanceId: event.serverInstanceId,
      eventId: event.eventId,
      agentId: event.agentId,
      machineId: event.machineId,
      kind: event.kind,
    };
    const move = { transportInstanceId: event.serverInstanceId, cursor: event.eventId };
    if (event.kind === "receipt.updated") return this.handleReceiptUpdate(event.payload, move);
    if (event.kind !== "turn.result" && event.kind !== "turn.summary") {
      // Lifecycle events never resolve or replace a result; they only let the cursor pass.
      this.passed(move);
      this.metrics.events.inc({ kind: event.kind, verdict: "ignored" });
      return;
    }
    return this.apply(await this.evaluate(frame, origin), frame, origin, move);
  }

  /** Writes the cursor past every frame decided without a staging step; nothing when none is owed. */
  async flushCursor(): Promise<void> {
    const move = this.unstaged;
    if (move === undefined) return;
    await this.store.stage({ action: "ignore" }, move);
    if (this.unstaged === move) this.unstaged = undefined;
  }

  /** A frame decided without a staging step: the cursor passes it with the next step or flush. */
  private passed(move: CursorMove): void {
    this.unstaged = move;
  }

  /** A staging step wrote the cursor: what was owed up to it is written. */
  private staged(move: CursorMove | undefined): void {
    if (move !== undefined && this.unstaged !== undefined && this.unstaged.cursor <= move.cursor)
      this.unstaged = undefined;
  }

  /** Re-evaluates every held result (after a receipt bound, and when a session starts). */
  async reevaluateWaiting(): Promise<void> {
    if (!this.mayHoldResults) return;
    let stillHeld = 0;
    for (const { field, held: entry } of await this.store.heldResults()) {
      const verdict = await this.evaluate(entry.frame, entry.origin);
      if (verdict.verdict !== "wait") await this.apply(verdict, entry.frame, entry.origin, undefined, field);
      else stillHeld += 1;
    }
    this.mayHoldResults = stillHeld > 0;
  }

  private async evaluate(frame: Record<string, unknown>, origin: EventOrigin): Promise<Verdict> {
    const now = Date.now();
    if (isLegacySummary(frame, origin.kind)) return resolveLegacySummary(this.store, frame, origin, now);
    const claim = readCorrelatedClaim(frame);
    if (isVerdict(claim)) return claim;
    return resolveMembers(this.store, claim, origin, now);
  }

  private async apply(
    verdict: Verdict,
    frame: Record<string, unknown>,
    origin: EventOrigin | undefined,
    move: CursorMove | undefined,
    heldAs?: string,
  ): Promise<void> {
    const identity = canonicalHash({ kind: frame.kind, agentId: frame.agentId, payload: frame.payload });
    const staged = () =>
      this.metrics.events.inc({ kind: String(origin?.kind ?? frame.kind), verdict: verdict.verdict });
    if (verdict.verdict === "route") {
      const claim = await this.claim(verdict.routed);
      if (claim.verdict !== "route") return this.apply(claim, frame, origin, move, heldAs);
      await appendToStream(this.redis, this.keys, STREAM_CATALOG.osRouted, verdict.routed);
      await this.crashPoint.reach("router.after-stage");
      await this.store.stage({ action: "routed", waitingField: heldAs }, move);
      this.staged(move);
      return staged();
    }
    if (verdict.verdict === "protocol_error") {
      const { routed, claimedHash } = verdict;
      const recorded = await this.store.stage(
        {
          action: "protocol_error",
          waitingField: heldAs,
          protocolErrorId: `${resultKeyOf(routed.serverInstanceId, routed.resultId)}|${routed.contentHash}`,
          protocolError: {
            code: "RESULT_CONTENT_CHANGED",
            serverInstanceId: routed.serverInstanceId,
            resultId: routed.resultId,
            storedHash: claimedHash,
            receivedHash: routed.contentHash,
            transportInstanceId: routed.source.transportInstanceId,
            eventId: routed.source.eventId,
            at: Date.now(),
          },
        },
        move,
      );
      this.staged(move);
      staged();
      if (recorded) this.metrics.protocolErrors.inc({ code: "RESULT_CONTENT_CHANGED" });
      this.log.error(
        { resultId: routed.resultId, storedHash: claimedHash, receivedHash: routed.contentHash },
        "protocol error: result id reused with different content or membership",
      );
      return;
    }
    if (verdict.verdict === "wait") {
      if (!origin) throw new Error("a held result needs its transport origin");
      const held: HeldResult = { frame, origin, heldAt: Date.now() };
      const waitingJson = JSON.stringify(held);
      this.mayHoldResults = true;
      await this.store.stage({ action: "wait", waitingField: identity, waitingJson }, move);
      this.staged(move);
      return staged();
    }
    const recorded = await this.store.stage(
      {
        action: "reject",
        waitingField: heldAs,
        rejectionId: identity,
        rejection: {
          reason: verdict.reason,
          detail: verdict.detail,
          kind: String(frame.kind ?? frame.type),
          agentId: origin?.agentId,
          transportInstanceId: origin?.transportInstanceId,
          eventId: origin?.eventId,
          serverInstanceId: verdict.serverInstanceId,
          resultId: verdict.resultId,
          rejectedBy: "router",
          at: Date.now(),
        },
      },
      move,
    );
    this.staged(move);
    staged();
    if (recorded) this.metrics.rejectedEvents.inc({ reason: verdict.reason });
    this.log.warn({ reason: verdict.reason, detail: verdict.detail }, "harness event rejected");
  }

  /**
   * Claims the routed result's member runs for it, atomically: the runs the validation found may have been claimed
   * by another result or ended since they were read. A replay of this very result claims nothing new and routes again.
   */
  private async claim(routed: OsRouted): Promise<Verdict> {
    const { serverInstanceId, resultId, contentHash, members } = routed;
    const resultKey = resultKeyOf(serverInstanceId, resultId);
    const claim = await this.store.claimResult(
      resultKey,
      contentHash,
      members.map((member) => member.runId),
    );
    const identity = { serverInstanceId, resultId };
    if (claim.outcome === "content_changed")
      return { verdict: "protocol_error", routed, claimedHash: claim.claimedHash };
    if (claim.outcome === "member_taken") {
      const by = claim.routedAs === undefined ? "" : `, claimed by ${claim.routedAs}`;
      return reject("MEMBER_NOT_PENDING", `run ${claim.runId} is ${claim.state}${by}`, identity);
    }
    return { verdict: "route", routed };
  }

  private async handleReceiptUpdate(payload: Record<string, unknown>, move: CursorMove): Promise<void> {
    const parsed = receiptUpdatedPayloadSchema.safeParse(payload);
    if (parsed.success) {
      const { outcome } = await this.store.bindReceipt(parsed.data.receipt);
      if (outcome === "conflict") this.metrics.receiptConflicts.inc({ source: "receipt.updated" });
      if (outcome === "bound") this.hooks.receiptBound();
    } else {
      this.log.warn({ issue: parsed.error.issues[0]?.message }, "receipt.updated payload is invalid");
    }
    this.passed(move);
    this.metrics.events.inc({ kind: "receipt.updated", verdict: parsed.success ? "applied" : "invalid" });
  }

  private async handleResync(frame: Record<string, unknown>): Promise<void> {
    const parsed = resyncSchema.safeParse(frame);
    if (!parsed.success) {
      this.log.warn({ issue: parsed.error.issues[0]?.message }, "invalid resync frame");
      return;
    }
    const { serverInstanceId, cursor } = parsed.data;
    // A resync starts the cursor afresh: nothing owed from before it may be written after it.
    this.unstaged = undefined;
    await this.store.stage({ action: "resync" }, { transportInstanceId: serverInstanceId, cursor });
    this.metrics.events.inc({ kind: "resync", verdict: parsed.data.reason });
    this.hooks.resynced(serverInstanceId);
  }
}
