import { receiptGetResultSchema } from "../../libs/contract/harness-wire.js";
import type { Receipt } from "../../libs/contract/receipt.js";
import { errorMessage } from "../../libs/errors/error-message.js";
import type { Logger } from "../../libs/logging/logger.js";
import type { ExpiredHeldResult } from "../../libs/os-store/expired-held-result.js";
import { heldResultView } from "../../libs/os-store/held-result.js";
import type { RejectionRecord } from "../../libs/contract/os-audit-records.js";
import type { LiveLink } from "./command-processor.js";
import { runsNamedBy } from "./held-result-runs.js";
import type { RouterMetrics } from "./router-metrics.js";
import type { BindOutcome, HeldEntry, RouterStore } from "./router-store.js";
import { deadlineEndReason, receiptMayStillMove } from "./run-end-reason.js";

/** Due runs handled per sweep; the rest are handled by the next one. */
const DUE_PER_SWEEP = 64;
/**
 * The longest an idle device's sweeps are apart: nothing due, nothing held, no run coming due sooner. A run
 * registered meanwhile pokes the sweep (its registration wakes the partition's holder), so this is a safety net.
 */
const IDLE_SWEEP_MS = 30_000;

interface HeldWait extends HeldEntry {
  runIds: string[];
}

/**
 * No run of one device stays `pending` for ever: every `everyMs` the runs whose voice target expired more than
 * `graceMs` ago are asked for once (`receipt.get`) and then ended `unknown` with the OS's reason; without a live
 * Harness link they wait for one, and end unasked a further `graceMs` later (`HARNESS_UNREACHABLE`); a held result whose runs have all ended is given up (rejected, its frame kept). Store changes run
 * between frames (`exclusive`), never during one.
 */
export class RunDeadlines {
  /** Due runs already asked for: the next sweep ends them without asking again. */
  private asked = new Set<string>();
  private timer: NodeJS.Timeout | undefined;
  /** When the scheduled sweep fires (epoch ms). */
  private nextSweepAt = 0;
  private sweeping: Promise<void> = Promise.resolve();
  private stopped = false;

  constructor(
    private readonly options: {
      store: RouterStore;
      live: () => LiveLink | undefined;
      bindReceipt: (receipt: Receipt, source: "receipt.get") => Promise<BindOutcome>;
      exclusive: (task: () => Promise<void>) => Promise<void>;
      graceMs: number;
      everyMs: number;
      metrics: RouterMetrics;
      log: Logger;
    },
  ) {}

  start(): void {
    this.schedule(this.options.everyMs);
  }

  /** A run may have been registered: sweep within `everyMs` even if the device looked idle. */
  poke(): void {
    if (!this.stopped && this.nextSweepAt > Date.now() + this.options.everyMs)
      this.schedule(this.options.everyMs);
  }

  private schedule(delayMs: number): void {
    clearTimeout(this.timer);
    this.nextSweepAt = Date.now() + delayMs;
    this.timer = setTimeout(() => {
      this.sweeping = this.sweep()
        .catch((error: unknown) => {
          this.options.log.warn({ err: errorMessage(error) }, "deadline sweep failed; retrying");
          return this.options.everyMs;
        })
        .then((nextMs) => {
          if (!this.stopped) this.schedule(nextMs);
        });
    }, delayMs);
  }

  async stop(): Promise<void> {
    this.stopped = true;
    clearTimeout(this.timer);
    await this.sweeping;
  }

  /** One sweep; answers how long until the next: soon while anything is due or held, else until a run comes due. */
  async sweep(now = Date.now()): Promise<number> {
    const { graceMs, everyMs } = this.options;
    const { due, nextExpiresAt, held } = await this.options.store.dueRuns(now - graceMs, DUE_PER_SWEEP);
    this.asked = new Set([...this.asked].filter((runId) => due.includes(runId)));
    const ending: { runId: string; harnessAsked: boolean }[] = [];
    for (const runId of due) {
      const verdict = await this.verdict(runId, now);
      if (verdict !== "later") ending.push({ runId, harnessAsked: verdict === "end" });
    }
    const busy = due.length > 0 || held > 0;
    if (busy)
      await this.options.exclusive(async () => {
        const waits = held > 0 ? await this.heldWaits() : [];
        const heldRuns = new Set(waits.flatMap((wait) => wait.runIds));
        for (const { runId, harnessAsked } of ending)
          await this.end(runId, heldRuns.has(runId), harnessAsked);
        for (const wait of waits) await this.giveUpIfOrphaned(wait);
      });
    if (busy) return everyMs;
    const untilDue = nextExpiresAt === undefined ? IDLE_SWEEP_MS : nextExpiresAt + graceMs - Date.now();
    return Math.min(IDLE_SWEEP_MS, Math.max(everyMs, untilDue));
  }

  /**
   * Asks the Harness once for a due run's receipt and binds the answer (which may end the run with the Harness's
   * reason). `later` when a receipt newly bound (a held result may apply now, so the run is judged at the next
   * sweep) or when there is no live link to ask yet; only after a whole further grace without one does the run end
   * unasked (`unasked`, reason HARNESS_UNREACHABLE).
   */
  private async verdict(runId: string, now: number): Promise<"end" | "unasked" | "later"> {
    if (this.asked.has(runId)) return "end";
    const run = await this.options.store.run(runId);
    if (!run || !receiptMayStillMove(run)) return "end";
    const live = this.options.live();
    if (!live) return run.voiceTargetExpiresAt + 2 * this.options.graceMs <= now ? "unasked" : "later";
    this.asked.add(runId);
    const answer = await live.link.request(
      { type: "receipt.get", idempotencyKey: run.idempotencyKey },
      receiptGetResultSchema,
    );
    if (!answer.ok || !answer.value.receipt) return "end";
    return (await this.options.bindReceipt(answer.value.receipt, "receipt.get")) === "bound"
      ? "later"
      : "end";
  }

  private async end(runId: string, heldResultNamesRun: boolean, harnessAsked: boolean): Promise<void> {
    const run = await this.options.store.run(runId);
    if (run?.state !== "pending") return;
    const reason = deadlineEndReason(run, heldResultNamesRun, harnessAsked);
    if (!(await this.options.store.endRun(runId, reason, Date.now()))) return;
    this.options.metrics.runDeadlines.inc({ reason });
    this.options.log.info({ runId, reason }, "run ended unknown at its deadline");
  }

  private async heldWaits(): Promise<HeldWait[]> {
    const entries = await this.options.store.heldResults();
    return Promise.all(
      entries.map(async (entry) => ({ ...entry, runIds: await runsNamedBy(this.options.store, entry.held) })),
    );
  }

  /** A held result none of whose runs is still pending can never apply: it is given up, with a trace. */
  private async giveUpIfOrphaned(wait: HeldWait): Promise<void> {
    const runs = await Promise.all(wait.runIds.map((runId) => this.options.store.run(runId)));
    if (runs.some((run) => run?.state === "pending")) return;
    const now = Date.now();
    const reason = "RECEIPTS_NEVER_BOUND";
    const expired: ExpiredHeldResult = { id: wait.field, held: wait.held, reason, expiredAt: now };
    const view = heldResultView(wait.field, wait.held);
    const rejection: RejectionRecord = {
      reason,
      detail: `every run it waited for ended before its receipt bound (${wait.runIds.join(", ") || "none"})`,
      kind: wait.held.origin.kind,
      agentId: wait.held.origin.agentId,
      transportInstanceId: wait.held.origin.transportInstanceId,
      eventId: wait.held.origin.eventId,
      serverInstanceId: view.serverInstanceId ?? undefined,
      resultId: view.resultId ?? undefined,
      rejectedBy: "router",
      at: now,
    };
    if (!(await this.options.store.expireHeld(expired, rejection))) return;
    this.options.metrics.rejectedEvents.inc({ reason });
    this.options.log.warn(
      { id: wait.field, runIds: wait.runIds },
      "held result given up: receipts never bound",
    );
  }
}
