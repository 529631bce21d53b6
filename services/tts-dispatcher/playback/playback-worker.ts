import { DelayedError, UnrecoverableError, Worker, type ConnectionOptions, type Job } from "bullmq";
import type { RedisClient } from "../../../libs/redis/redis-client.js";
import { RecentMap } from "../../../libs/collections/recent-map.js";
import { QUEUE_CATALOG } from "../../../libs/contract/catalog.js";
import { LAMP_GATEWAY_HEARTBEAT_MS, LAMP_STREAMS } from "../../../libs/contract/lamp-delivery.js";
import { playbackJobSchema, type PlaybackJob } from "../../../libs/contract/lamp-payloads.js";
import type { PlaybackState } from "../../../libs/contract/os-playback.js";
import type { Logger } from "../../../libs/logging/logger.js";
import type { Keyspace } from "../../../libs/redis/keyspace.js";
import { errorMessage } from "../../../libs/errors/error-message.js";
import { appendToStream } from "../../../libs/streams/stream-writer.js";
import type { CrashPoint } from "../../../libs/test-support/crash-point.js";
import type { PlaybackSend, PlaybackStore, StepResult } from "../store/playback-store.js";
import type { TtsMetrics } from "../tts-metrics.js";
import type { AckNotices, AckWait } from "./ack-notices.js";
import { promoteIfDelayed, type PlaybackQueue } from "./playback-queue.js";

export interface PlaybackWorkerOptions {
  connection: ConnectionOptions;
  prefix: string;
  redis: RedisClient;
  keys: Keyspace;
  store: PlaybackStore;
  metrics: TtsMetrics;
  log: Logger;
  concurrency: number;
  ackTimeoutMs: number;
  /** While no Lamp is connected, a waiting job checks again after at most this long. */
  offlineRecheckMs: number;
  /** How long a repeat may wait for the Lamp. */
  repeatWaitMs: number;
  /** Wakes a job that waits behind the playback just sent. */
  queue: Pick<PlaybackQueue, "wake">;
  lockDurationMs: number;
  stalledIntervalMs: number;
  crashPoint: CrashPoint;
  /** Wakes the wait for an ack when the ack step publishes it. */
  notices: AckNotices;
}

/** A playback its claim moved to sending: who it is for and what its playback.start carries. */
interface ClaimedPlayback extends PlaybackSend {
  deviceId: string;
  playbackId: string;
}

/** A notice may be lost (a reconnect of the subscriber): a waiting worker reads the state itself this often. */
const ACK_RECHECK_MS = 1_000;

/**
 * A gateway seen with a heartbeat is taken as alive for one beat without asking again: its heartbeat key outlives a
 * dead process by up to three beats anyway, so this adds at most one beat to the time a dead gateway looks alive.
 */
const ALIVE_TRUSTED_MS = LAMP_GATEWAY_HEARTBEAT_MS;

/** Gateway instances whose heartbeat a worker remembers seeing: restarts bring new ones, the oldest are forgotten. */
const GATEWAYS_REMEMBERED = 64;

/**
 * Sends one playback to the Lamp at most once: claim (queued → sending, atomically with the presence check), write
 * playback.start to the gateway holding the socket, wait for `started` (woken by the ack step's notice, no polling). A playback found already `sending` was
 * interrupted mid-send and becomes `uncertain` without being sent again; so does one whose ack never came. With no
 * Lamp connected the job waits, delayed without spending an attempt, until the claim says to check again or a
 * `lamp.connected` wakes it. A device's answers start in the order the router routed them: a job behind an
 * earlier result waits the same way, until that one has started on the Lamp (its ack) or ended, which wakes it.
 */
export class PlaybackWorker {
  private readonly worker: Worker<PlaybackJob>;
  private stopping = false;
  /** gatewayId -> when it was last seen with a heartbeat (the most recently seen gateways: they come and go). */
  private readonly aliveAt = new RecentMap<string, number>(GATEWAYS_REMEMBERED);

  constructor(private readonly options: PlaybackWorkerOptions) {
    this.worker = new Worker<PlaybackJob>(
      QUEUE_CATALOG.lampPlayback.name,
      (job, token) => this.process(job, token),
      {
        connection: options.connection,
        prefix: options.prefix,
        concurrency: options.concurrency,
        lockDuration: options.lockDurationMs,
        stalledInterval: options.stalledIntervalMs,
        maxStalledCount: 3,
        autorun: false,
      },
    );
    this.worker.on("failed", (job, error) => void this.onFailed(job, error));
    this.worker.on("error", (error) =>
      options.log.warn({ err: errorMessage(error) }, "playback worker error"),
    );
  }

  start(): void {
    void this.worker.run();
  }

  isRunning(): boolean {
    return this.worker.isRunning();
  }

  /** Stops taking jobs; in-flight ack waits end now and leave their playback `uncertain` (a late ack still lands). */
  async stop(): Promise<void> {
    this.stopping = true;
    this.options.notices.close();
    await this.worker.close();
  }

  private async process(job: Job<PlaybackJob>, token: string | undefined): Promise<void> {
    const { deviceId, playbackId } = playbackJobSchema.parse(job.data);
    const { store, log } = this.options;
    const presence = await this.presence(deviceId);
    const claim = await store.step(
      deviceId,
      playbackId,
      {
        op: "claim",
        deadGateway: presence && !presence.alive ? presence.gatewayId : "",
        offlineRecheckMs: this.options.offlineRecheckMs,
        repeatWaitMs: this.options.repeatWaitMs,
      },
      Date.now(),
    );
    if (claim.verdict === "unknown") {
      log.warn({ deviceId, playbackId }, "playback job without a playback record; nothing sent");
      return;
    }
    // Cannot happen for playbacks this service creates; the claim left it queued, so it ends failed, not uncertain.
    if (claim.verdict === "invalid")
      throw new UnrecoverableError(`PLAYBACK_INVALID: ${playbackId} has no voice target`);
    await this.settle(deviceId, claim);
    if (claim.verdict === "offline" && claim.waitUntil !== undefined)
      return this.waitForLamp(job, token, { deviceId, playbackId }, claim.waitUntil);
    if (claim.verdict === "behind" && claim.waitUntil !== undefined && claim.waitingFor !== undefined)
      return this.waitForTurn(job, token, { deviceId, playbackId }, claim.waitUntil, claim.waitingFor);
    if (claim.verdict !== "moved" || claim.state !== "sending" || !claim.gatewayId || !claim.send) return;
    await this.send({ deviceId, playbackId, ...claim.send }, claim.gatewayId);
  }

  /**
   * Parks the job until its wait in the speech order ends, like a wait for the Lamp. The result ahead that left the
   * order between the claim and the move could not wake a job not yet delayed: seen here, the job wakes itself.
   */
  private async waitForTurn(
    job: Job<PlaybackJob>,
    token: string | undefined,
    { deviceId, playbackId }: PlaybackJob,
    waitUntil: number,
    waitingFor: string,
  ): Promise<never> {
    await job.moveToDelayed(waitUntil, token);
    this.options.log.info(
      { deviceId, playbackId, waitingFor, waitUntil },
      "playback waits for an earlier answer",
    );
    if (!(await this.options.store.inSpeechOrder(deviceId, waitingFor))) await promoteIfDelayed(job);
    throw new DelayedError();
  }

  /**
   * Parks the job until `waitUntil` without spending an attempt (BullMQ's manual delay skips the attempt count). A
   * Lamp that connected between the claim and the move found the job not yet delayed and could not wake it: the
   * presence it set first is seen here, and the job wakes itself.
   */
  private async waitForLamp(
    job: Job<PlaybackJob>,
    token: string | undefined,
    { deviceId, playbackId }: PlaybackJob,
    waitUntil: number,
  ): Promise<never> {
    await job.moveToDelayed(waitUntil, token);
    this.options.log.info({ deviceId, playbackId, waitUntil }, "playback waits for the Lamp");
    if ((await this.presence(deviceId))?.alive) await promoteIfDelayed(job);
    throw new DelayedError();
  }

  /**
   * The gateway instance the device's presence key names, and whether that instance has a heartbeat: a SIGKILLed
   * gateway leaves its presence keys until their TTL, and a playback sent into its stream would be lost, not
   * delivered. Read before the claim; the claim compares a dead holder with the presence it reads atomically, so a
   * Lamp that meanwhile reconnected to a live instance is sent to at once.
   */
  private async presence(deviceId: string): Promise<{ gatewayId: string; alive: boolean } | undefined> {
    const { redis, keys, log } = this.options;
    const gatewayId = await redis.get(keys.lampPresence(deviceId));
    if (gatewayId === null) return undefined;
    const seenAt = this.aliveAt.get(gatewayId);
    if (seenAt !== undefined && Date.now() - seenAt < ALIVE_TRUSTED_MS) return { gatewayId, alive: true };
    const alive = (await redis.exists(keys.lampGatewayAlive(gatewayId))) === 1;
    if (alive) {
      this.aliveAt.set(gatewayId, Date.now());
    } else {
      this.aliveAt.delete(gatewayId);
      log.info({ deviceId, gateway: gatewayId }, "lamp presence names a gateway without heartbeat");
    }
    return { gatewayId, alive };
  }

  private async send(playback: ClaimedPlayback, gatewayId: string): Promise<void> {
    const { notices } = this.options;
    const wait = notices.expect(playback.deviceId, playback.playbackId);
    try {
      await this.sendAndAwaitAck(playback, gatewayId, wait);
    } finally {
      wait.end();
    }
  }

  private async sendAndAwaitAck(playback: ClaimedPlayback, gatewayId: string, wait: AckWait): Promise<void> {
    const { redis, keys, store, metrics, crashPoint } = this.options;
    const sentAt = Date.now();
    await appendToStream(redis, keys, LAMP_STREAMS.lampDelivery(gatewayId), {
      deviceId: playback.deviceId,
      frame: {
        type: "playback.start",
        playbackId: playback.playbackId,
        resultId: playback.resultId,
        voiceTargetId: playback.voiceTargetId,
        text: playback.text,
      },
      sentAt,
    });
    metrics.recordPlaybackStart(playback, sentAt);
    await crashPoint.reach("tts-dispatcher.mid-send");
    const acked = await this.awaitAck(playback, sentAt, wait);
    metrics.ackWait.observe({ outcome: acked ?? "timeout" }, (Date.now() - sentAt) / 1000);
    // No ack in time: the timeout step reads the state once more, atomically with moving it to uncertain.
    if (acked === undefined)
      await this.settle(
        playback.deviceId,
        await store.step(playback.deviceId, playback.playbackId, { op: "ack-timeout" }, Date.now()),
      );
  }

  /**
   * Waits for the notice that an ack moved the playback out of `sending`, re-reading the state every
   * ACK_RECHECK_MS (a lost notice never loses an ack); returns the state an ack left, or undefined when none came
   * before the ack timeout (or the worker is stopping).
   */
  private async awaitAck(
    playback: ClaimedPlayback,
    sentAt: number,
    wait: AckWait,
  ): Promise<PlaybackState | undefined> {
    const deadline = sentAt + this.options.ackTimeoutMs;
    for (;;) {
      const remaining = deadline - Date.now();
      if (remaining <= 0 || this.stopping) return undefined;
      const notice = await wait.next(Math.min(remaining, ACK_RECHECK_MS));
      if (notice !== "no-notice") return notice;
      if (this.stopping) return undefined;
      const state = await this.options.store.playbackState(playback.deviceId, playback.playbackId);
      if (state !== "sending") return state;
    }
  }

  /** A job that gave up for good (attempts spent, stalled too often) must not leave its playback `sending`/`queued`. */
  private async onFailed(job: Job<PlaybackJob> | undefined, error: Error): Promise<void> {
    if (!job) return;
    try {
      if ((await job.getState()) !== "failed") return;
      const { deviceId, playbackId } = playbackJobSchema.parse(job.data);
      const step = await this.options.store.step(deviceId, playbackId, { op: "abandon" }, Date.now());
      await this.settle(deviceId, step);
      this.options.log.warn(
        { deviceId, playbackId, err: error.message, state: step.state },
        "playback job failed",
      );
    } catch (failure) {
      this.options.log.error(
        { jobId: job.id, err: errorMessage(failure) },
        "could not settle a failed playback job",
      );
    }
  }

  /** Counts a move, and wakes the playback now first in the device's speech order when this one left it. */
  private async settle(deviceId: string, step: StepResult): Promise<void> {
    if (step.verdict === "moved" && step.kind && step.state)
      this.options.metrics.recordPlayback(step.kind, step.state, step.reason);
    if (step.wake !== undefined) await this.options.queue.wake(deviceId, step.wake);
  }
}
