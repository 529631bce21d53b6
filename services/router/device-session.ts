import type { RedisClient } from "../../libs/redis/redis-client.js";
import { signToken } from "../../libs/auth/tokens.js";
import {
  helloResultSchema,
  PROTOCOL_VERSION,
  receiptGetResultSchema,
  TURN_CORRELATION_V2,
} from "../../libs/contract/harness-wire.js";
import type { Receipt } from "../../libs/contract/receipt.js";
import type { Logger } from "../../libs/logging/logger.js";
import { OsDeviceKeys } from "../../libs/os-store/os-keys.js";
import type { Keyspace } from "../../libs/redis/keyspace.js";
import { CrashPoint } from "../../libs/test-support/crash-point.js";
import { errorMessage } from "../../libs/errors/error-message.js";
import { CommandProcessor, type LiveLink } from "./command-processor.js";
import type { RouterConfig } from "./config.js";
import { EventIntake } from "./event-intake.js";
import { HarnessLink } from "./harness-link.js";
import type { RouterMetrics } from "./router-metrics.js";
import { RouterStore, type BindOutcome } from "./router-store.js";
import { receiptMayStillMove } from "./run-end-reason.js";
import { RunDeadlines } from "./run-deadlines.js";
import { sleep } from "../../libs/timing/sleep.js";
import { SessionRecord } from "./session-record.js";

/**
 * How long a session's frame queue stays idle before the cursor is written past frames decided without a staging
 * step (receipts, lifecycle events): one write per burst. A crash loses at most this much cursor progress, and the
 * Harness replays those frames, which change nothing the second time.
 */
const CURSOR_FLUSH_MS = 200;

export interface SessionDeps {
  deviceId: string;
  leaseOwner: string;
  config: RouterConfig;
  redis: RedisClient;
  keys: Keyspace;
  metrics: RouterMetrics;
  log: Logger;
}

/**
 * The one Harness session of one device, held while this replica holds the device's partition and the device is
 * active (services/router/partition-devices.ts): hello with
 * `turn.correlation.v2` resuming from the persisted cursor, every inbound frame handled strictly in arrival order,
 * receipts reconciled with `receipt.get` after each hello and resync (never an input resent), and the device's
 * commands executed. A frame that cannot be staged closes the connection, so the Harness replays it.
 */
export class DeviceSession {
  private readonly store: RouterStore;
  private readonly intake: EventIntake;
  private readonly commands: CommandProcessor;
  private readonly deadlines: RunDeadlines;
  private live: LiveLink | undefined;
  private link: HarnessLink | undefined;
  private generation = 0;
  private queue: Promise<void> = Promise.resolve();
  private cursorFlush: NodeJS.Timeout | undefined;
  private active = true;
  private loop: Promise<void> | undefined;
  private known = true;
  private readonly log: Logger;
  private readonly record: SessionRecord;

  constructor(private readonly deps: SessionDeps) {
    const log = deps.log.child({ deviceId: deps.deviceId });
    this.log = log;
    const device = new OsDeviceKeys(deps.keys, deps.deviceId);
    this.store = new RouterStore(deps.redis, device, deps.leaseOwner);
    this.record = new SessionRecord(deps.redis, device, deps.leaseOwner, log);
    const crashPoint = new CrashPoint(deps.config, deps.redis, deps.keys);
    this.intake = new EventIntake(this.store, deps.redis, deps.keys, deps.metrics, crashPoint, log, {
      receiptBound: () => this.enqueue(() => this.intake.reevaluateWaiting()),
      resynced: () => void this.reconcile(),
    });
    this.commands = new CommandProcessor({
      redis: deps.redis,
      keys: deps.keys,
      store: this.store,
      live: () => this.live,
      metrics: deps.metrics,
      log,
      retryDelayMs: deps.config.HARNESS_RECONNECT_MS,
      catchUpMs: deps.config.ROUTER_COMMAND_CATCHUP_MS,
      bindReceipt: (receipt, source, answered) => this.bindReceipt(receipt, source, answered),
    });
    this.deadlines = new RunDeadlines({
      store: this.store,
      live: () => this.live,
      bindReceipt: (receipt, source) => this.bindReceipt(receipt, source),
      exclusive: (task) => this.exclusive(task),
      graceMs: deps.config.RUN_DEADLINE_GRACE_MS,
      everyMs: deps.config.RUN_DEADLINE_SWEEP_MS,
      metrics: deps.metrics,
      log,
    });
  }

  async start(): Promise<void> {
    await this.commands.start();
    this.loop = this.run();
    this.deadlines.start();
  }

  /** The device may have new commands or runs (the gateway wakes the partition's holder after either). */
  poke(): void {
    this.commands.poke();
    this.deadlines.poke();
  }

  async stop(): Promise<void> {
    this.active = false;
    this.link?.close();
    await this.loop;
    await this.deadlines.stop();
    await this.commands.stop();
    await this.queue;
  }

  private async run(): Promise<void> {
    while (this.active) {
      try {
        if (await this.mayHoldSession()) await this.connectOnce();
      } catch (error) {
        this.log.warn({ err: errorMessage(error) }, "harness session ended");
      }
      this.live = undefined;
      if (this.active) await sleep(this.deps.config.HARNESS_RECONNECT_MS);
    }
  }

  /**
   * A revoked device (`revokeLamp` sets `B:session-revoked`) comes back only when its Lamp connects with a newer
   * token; until then this replica opens no Harness session for it, so nothing runs for the device.
   */
  private async mayHoldSession(): Promise<boolean> {
    const device = new OsDeviceKeys(this.deps.keys, this.deps.deviceId);
    const known = (await this.deps.redis.exists(device.sessionRevoked)) === 0;
    if (known !== this.known)
      this.log.info({ known }, known ? "device known again" : "device revoked; no harness session");
    this.known = known;
    return known;
  }

  private async connectOnce(): Promise<void> {
    await this.queue;
    const generation = ++this.generation;
    let closed: () => void = () => undefined;
    const ended = new Promise<void>((resolve) => (closed = resolve));
    const { config, deviceId } = this.deps;
    const token = await signToken(config.HARNESS_JWT_SECRET, {
      audience: "harness",
      role: "os",
      sub: deviceId,
      expiresInSeconds: 3600,
    });
    const link = new HarnessLink({
      url: config.HARNESS_URL,
      token,
      requestTimeoutMs: config.HARNESS_REQUEST_TIMEOUT_MS,
      log: this.log,
      onFrame: (frame) => {
        this.enqueue(() => this.intake.handleFrame(frame), generation);
        this.scheduleCursorFlush(generation);
      },
      onClose: () => closed(),
    });
    this.link = link;
    try {
      await link.open();
      if (!this.active) return;
      const cursor = await this.store.cursor();
      const hello = await link.request(
        {
          type: "hello",
          proto: PROTOCOL_VERSION,
          capabilities: config.TURN_CORRELATION_V2 ? [TURN_CORRELATION_V2] : [],
          ...(cursor
            ? { resume: { serverInstanceId: cursor.transportInstanceId, cursor: cursor.cursor } }
            : {}),
        },
        helloResultSchema,
      );
      if (!hello.ok) {
        throw new Error(`hello refused: ${hello.error.code} ${hello.error.message}`);
      }
      this.live = { link, transportInstanceId: hello.value.serverInstanceId };
      await this.record.opened(hello.value);
      this.log.info(
        { transportInstanceId: hello.value.serverInstanceId, resumed: hello.value.resumed },
        "harness session open",
      );
      this.enqueue(() => this.intake.reevaluateWaiting(), generation);
      void this.reconcile();
      await ended;
      await this.queue;
      if (generation === this.generation)
        await this.intake
          .flushCursor()
          .catch((error: unknown) =>
            this.log.warn({ err: errorMessage(error) }, "cursor not written at close; the Harness replays"),
          );
      await this.record.closed();
    } finally {
      link.close();
    }
  }

  /** Writes the cursor once the frames arriving now have been decided and the queue stayed idle a moment. */
  private scheduleCursorFlush(generation: number): void {
    if (this.cursorFlush !== undefined) return;
    this.cursorFlush = setTimeout(() => {
      this.cursorFlush = undefined;
      this.enqueue(() => this.intake.flushCursor(), generation);
    }, CURSOR_FLUSH_MS);
    this.cursorFlush.unref();
  }

  /** Frames and re-evaluations run one at a time; after a failure the rest of that connection's work is dropped. */
  private enqueue(task: () => Promise<void>, generation = this.generation): void {
    this.queue = this.queue.then(async () => {
      if (generation !== this.generation || !this.active) return;
      try {
        await task();
      } catch (error) {
        this.generation += 1;
        this.log.error({ err: errorMessage(error) }, "harness frame not staged; reconnecting to replay");
        this.link?.close();
      }
    });
  }

  /** Work that must not interleave with a frame's staging; its failure is the caller's, not the connection's. */
  private exclusive(task: () => Promise<void>): Promise<void> {
    const done = this.queue.then(task);
    this.queue = done.catch(() => undefined);
    return done;
  }

  /** Binds a receipt the Harness answered with; a newly bound one may let held results apply. */
  private async bindReceipt(
    receipt: Receipt,
    source: "turn.send" | "receipt.get",
    answered?: { entryId: string; group: string },
  ): Promise<BindOutcome> {
    const { outcome } = await this.store.bindReceipt(receipt, answered);
    if (outcome === "conflict") this.deps.metrics.receiptConflicts.inc({ source });
    if (outcome === "bound") this.enqueue(() => this.intake.reevaluateWaiting());
    return outcome;
  }

  /**
   * Asks the Harness for the receipt of every outstanding run whose receipt can still move (absent or not final)
   * and binds what it answers; never resends.
   */
  private async reconcile(): Promise<void> {
    try {
      for (const run of (await this.store.pendingRuns()).filter(receiptMayStillMove)) {
        const live = this.live;
        if (!live) return;
        const answer = await live.link.request(
          { type: "receipt.get", idempotencyKey: run.idempotencyKey },
          receiptGetResultSchema,
        );
        if (answer.ok && answer.value.receipt) await this.bindReceipt(answer.value.receipt, "receipt.get");
      }
    } catch (error) {
      this.log.warn({ err: errorMessage(error) }, "receipt reconciliation interrupted");
    }
  }
}
