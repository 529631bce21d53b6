import { DelayedError, UnrecoverableError, Worker, type ConnectionOptions, type Job } from "bullmq";
import type { RedisClient } from "../../../libs/redis/redis-client.js";
import { RecentMap } from "../../../libs/collections/recent-map.js";
import { QUEUE_CATALOG, STREAM_CATALOG } from "../../../libs/contract/catalog.js";
import { LAMP_GATEWAY_HEARTBEAT_MS } from "../../../libs/contract/lamp-delivery.js";
import { playbackJobSchema, type PlaybackJob } from "../../../libs/contract/lamp-payloads.js";
import type { PlaybackKind, PlaybackReason, PlaybackState } from "../../../libs/contract/os-playback.js";
import type { Logger } from "../../../libs/logging/logger.js";
import { OsDeviceKeys } from "../../../libs/os-store/os-keys.js";
import type { Keyspace } from "../../../libs/redis/keyspace.js";
import { errorMessage } from "../../../libs/errors/error-message.js";
import { appendToStream } from "../../../libs/streams/stream-writer.js";
import type { CrashPoint } from "../../../libs/test-support/crash-point.js";
import type { Claim, PlaybackStore } from "../store/playback-store.js";
import type { TtsMetrics } from "../tts-metrics.js";
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
  /** Wakes the job of the playback that became the head of its device's line; gives a job to a head without one. */
  queue: Pick<PlaybackQueue, "wake" | "enqueue">;
  lockDurationMs: number;
  stalledIntervalMs: number;
  crashPoint: CrashPoint;
}

/** A playback its claim moved to sending: who it is for and what its playback.start carries. */
type ClaimedPlayback = PlaybackJob & Omit<Extract<Claim, { verdict: "sending" }>, "verdict" | "endedHeads">;

/**
 * A gateway seen with a heartbeat is taken as alive for one beat without asking again: its heartbeat key outlives a
 * dead process by up to three beats anyway, so this adds at most one beat to the time a dead gateway looks alive.
 */
const ALIVE_TRUSTED_MS = LAMP_GATEWAY_HEARTBEAT_MS;

/** Gateway instances whose heartbeat a worker remembers seeing: restarts bring new ones, the oldest are forgotten. */
const GATEWAYS_REMEMBERED = 64;

/**
 * Sends one playback to the Lamp at most once. Each run of a job is one short turn: the claim step says what to do
 * (send, wait, or nothing), and every wait (for its turn in the device's line, for the Lamp, for the ack) is the job
 * delayed until a deadline, woken early by the event it waits for, so no worker slot is held while a device is
 * waited for. Send: claim (queued → sending, atomically with the presence check, only for the head of the device's
 * line), write playback.start to the gateway holding the socket, mark it sent (from then on it may be on the Lamp),
 * then wait for the ack until its deadline; the ack step moves it and wakes the next head. A playback found `sending`
 * but never marked sent, or sent and past its ack deadline, becomes `uncertain` without being sent again. Waiting
 * spends no attempt (BullMQ's manual delay).
 */
export class PlaybackWorker {
  private readonly worker: Worker<PlaybackJob>;
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

  /** Stops taking jobs; a playback waiting for its ack keeps its deadline (the job wakes there after a restart). */
  async stop(): Promise<void> {
    await this.worker.close();
  }

  private async process(job: Job<PlaybackJob>, token: string | undefined): Promise<void> {
    const playback = playbackJobSchema.parse(job.data);
    const { deviceId, playbackId } = playback;
    const { store, log, metrics } = this.options;
    const presence = await this.presence(deviceId);
    const claim = await store.claim(
      deviceId,
      playbackId,
      {
        deadGateway: presence && !presence.alive ? presence.gatewayId : undefined,
        offlineRecheckMs: this.options.offlineRecheckMs,
        repeatWaitMs: this.options.repeatWaitMs,
      },
      Date.now(),
    );
    if ("endedHeads" in claim)
      for (const head of claim.endedHeads ?? []) metrics.recordPlayback(head.kind, head.state, head.reason);
    switch (claim.verdict) {
      case "unknown":
        log.warn({ deviceId, playbackId }, "playback job without a playback record; nothing sent");
        return;
      // Cannot happen for playbacks this service creates; the claim left it queued, so it ends failed, not uncertain.
      case "invalid":
        throw new UnrecoverableError(`PLAYBACK_INVALID: ${playbackId} has no voice target`);
      case "settled":
        return;
      case "ended":
        if (claim.reason === "ack_timeout")
          metrics.ackWait.observe({ outcome: "timeout" }, this.options.ackTimeoutMs / 1000);
        return this.ended(deviceId, claim);
      case "behind":
        return this.waitBehind(job, token, playback, claim.head, claim.waitUntil);
      case "offline":
        log.info({ deviceId, playbackId, waitUntil: claim.waitUntil }, "playback waits for the Lamp");
        // A Lamp that connected between the claim and the delay found the job not yet delayed.
        return this.park(
          job,
          token,
          claim.waitUntil,
          async () => (await this.presence(deviceId))?.alive === true,
        );
      case "awaiting-ack":
        return this.awaitAck(job, token, playback, claim.ackDeadline);
      case "sending":
        metrics.recordPlayback(claim.kind, "sending");
        return this.send(job, token, { ...playback, ...claim });
    }
  }

  /**
   * Writes the playback.start to the gateway, marks the playback sent, and ends the job's turn until the ack
   * deadline (the ack step moves the playback; its handler wakes this job to finish).
   */
  private async send(
    job: Job<PlaybackJob>,
    token: string | undefined,
    playback: ClaimedPlayback,
  ): Promise<void> {
    const { redis, keys, store, metrics, crashPoint } = this.options;
    const sentAt = Date.now();
    await appendToStream(redis, keys, STREAM_CATALOG.lampDelivery(playback.gatewayId), {
      deviceId: playback.deviceId,
      frame: {
        type: "playback.start",
        playbackId: playback.playbackId,
        resultId: playback.send.resultId,
        voiceTargetId: playback.send.voiceTargetId,
        text: playback.send.text,
      },
      sentAt,
    });
    metrics.recordPlaybackStart({ kind: playback.kind, resultKey: playback.send.resultKey }, sentAt);
    await crashPoint.reach("tts-dispatcher.mid-send");
    const sent = await store.sent(
      playback.deviceId,
      playback.playbackId,
      this.options.ackTimeoutMs,
      Date.now(),
    );
    // An ack that came first already moved the playback on.
    if (sent.verdict !== "awaiting-ack") return;
    return this.awaitAck(job, token, playback, sent.ackDeadline);
  }

  /**
   * Waits for the head of the device's line to leave. A queued head whose os.resolved entry was dead-lettered
   * between its outbox entry and its job has no job: it is given one, as a redelivery would (re-adding a job that
   * exists is a no-op), so the line never waits on a playback nobody works on.
   */
  private async waitBehind(
    job: Job<PlaybackJob>,
    token: string | undefined,
    { deviceId, playbackId }: PlaybackJob,
    head: Extract<Claim, { verdict: "behind" }>["head"],
    waitUntil: number,
  ): Promise<never> {
    const { store, queue, log } = this.options;
    log.info({ deviceId, playbackId, head: head.playbackId }, "playback waits for its turn");
    // A queued head is woken too: its own wake (the Lamp connecting, the line moving) may have been lost.
    if (head.state === "queued" && (await queue.wake(deviceId, head.playbackId)) === "missing")
      await queue.enqueue(head.kind, { deviceId, playbackId: head.playbackId });
    // The head may have left between the claim and the delay: then nobody would wake this job.
    return this.park(job, token, waitUntil, async () => (await store.lineHead(deviceId)) !== head.playbackId);
  }

  /** The ack may have come between the step that found it `sending` and the delay: nobody would wake the job then. */
  private awaitAck(
    job: Job<PlaybackJob>,
    token: string | undefined,
    { deviceId, playbackId }: PlaybackJob,
    ackDeadline: number,
  ): Promise<never> {
    return this.park(
      job,
      token,
      ackDeadline,
      async () => (await this.options.store.playbackState(deviceId, playbackId)) !== "sending",
    );
  }

  /**
   * Ends the job's turn until `until` without spending an attempt (BullMQ's manual delay), holding no worker slot
   * meanwhile. The event that should wake it early may have come before the job was delayed: `alreadyDue` says so,
   * and the job wakes itself.
   */
  private async park(
    job: Job<PlaybackJob>,
    token: string | undefined,
    until: number,
    alreadyDue: () => Promise<boolean>,
  ): Promise<never> {
    await job.moveToDelayed(until, token);
    if (await alreadyDue()) await promoteIfDelayed(job);
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
    const gatewayId = await redis.get(new OsDeviceKeys(keys, deviceId).lampPresence);
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

  /** A job that gave up for good (attempts spent, stalled too often) must not leave its playback `sending`/`queued`. */
  private async onFailed(job: Job<PlaybackJob> | undefined, error: Error): Promise<void> {
    if (!job) return;
    try {
      if ((await job.getState()) !== "failed") return;
      const { deviceId, playbackId } = playbackJobSchema.parse(job.data);
      const step = await this.options.store.abandon(deviceId, playbackId, Date.now());
      if (step.verdict === "ended") await this.ended(deviceId, step);
      this.options.log.warn(
        { deviceId, playbackId, err: error.message, verdict: step.verdict },
        "playback job failed",
      );
    } catch (failure) {
      this.options.log.error(
        { jobId: job.id, err: errorMessage(failure) },
        "could not settle a failed playback job",
      );
    }
  }

  /** Counts a playback's end, and wakes the playback that became the head of the device's line when this one left. */
  private async ended(
    deviceId: string,
    step: { kind: PlaybackKind; state: PlaybackState; reason?: PlaybackReason; wake?: string },
  ): Promise<void> {
    this.options.metrics.recordPlayback(step.kind, step.state, step.reason);
    if (step.wake !== undefined) await this.options.queue.wake(deviceId, step.wake);
  }
}
