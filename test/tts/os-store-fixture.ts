import { randomUUID } from "node:crypto";
import type { RedisClient } from "../../libs/redis/redis-client.js";
import { lampDeliverySchema, type LampDelivery } from "../../libs/contract/lamp-delivery.js";
import type { ReplyRoute } from "../../libs/contract/lamp-wire.js";
import {
  outboxEntrySchema,
  playbackRecordSchema,
  type OutboxEntry,
} from "../../libs/contract/os-playback.js";
import { QUEUE_CATALOG, STREAM_CATALOG } from "../../libs/contract/catalog.js";
import { runUpdateRecordSchema, type RunUpdateRecord } from "../../libs/contract/run-update.js";
import type { Outcome } from "../../libs/contract/turn-result.js";
import { OsDeviceKeys, resultKeyOf } from "../../libs/os-store/os-keys.js";
import { parseResultRecord, type ResultRecord } from "../../libs/os-store/result-record.js";
import { parseRunRecord, type RunRecord } from "../../libs/os-store/run-record.js";
import type { Keyspace } from "../../libs/redis/keyspace.js";
import { appendToStream, PAYLOAD_FIELD } from "../../libs/streams/stream-writer.js";
import { groupDrained } from "../helpers/stream-progress.js";

/**
 * Writes and reads the OS store with its own key layout and record schemas (libs/os-store), standing in for the
 * run registry and run-resolver where a test drives tts-dispatcher alone.
 */

/** A record as a Redis hash: absent fields stay absent, everything else is its string form. */
function toHash(record: Record<string, unknown>): Record<string, string> {
  const hash: Record<string, string> = {};
  for (const [field, value] of Object.entries(record)) {
    if (value === undefined) continue;
    hash[field] =
      typeof value === "string" ? value : typeof value === "number" ? String(value) : JSON.stringify(value);
  }
  return hash;
}

export interface RunSeed {
  runId: string;
  createdAt: number;
  voiceTargetId?: string;
  voiceTargetExpiresAt?: number;
  replyRoute?: ReplyRoute;
  cancelledAt?: number;
}

export interface ResultSeed {
  resultId: string;
  serverInstanceId?: string;
  outcome?: Outcome;
  fullText?: string;
  runIds: string[];
}

export const GATEWAY_ID = "gw-test-1";

export class OsStoreFixture {
  constructor(
    readonly redis: RedisClient,
    readonly keys: Keyspace,
  ) {}

  device(deviceId: string): OsDeviceKeys {
    return new OsDeviceKeys(this.keys, deviceId);
  }

  async seedRun(deviceId: string, run: RunSeed): Promise<void> {
    const record: RunRecord = {
      runId: run.runId,
      deviceId,
      agentId: "agent-fixture",
      machineId: "machine-fixture",
      idempotencyKey: `key-${run.runId}`,
      requestId: randomUUID(),
      text: "a question",
      voiceTargetId: run.voiceTargetId ?? "target-1",
      voiceTargetExpiresAt: run.voiceTargetExpiresAt ?? Date.now() + 600_000,
      replyRoute: run.replyRoute ?? "voice",
      state: "resolved",
      createdAt: run.createdAt,
      cancelledAt: run.cancelledAt,
    };
    const hash = toHash(record);
    parseRunRecord(hash);
    const device = this.device(deviceId);
    await this.redis.hset(device.run(run.runId), hash);
    await this.redis.zadd(device.runs, run.createdAt, run.runId);
  }

  /** Stores the result as the run-resolver would and publishes its os.resolved. */
  async seedResolvedResult(deviceId: string, seed: ResultSeed): Promise<string> {
    const serverInstanceId = seed.serverInstanceId ?? "originating-instance";
    const resultKey = resultKeyOf(serverInstanceId, seed.resultId);
    const members = seed.runIds.map((runId) => ({
      runId,
      deliveryId: `delivery-${runId}`,
      idempotencyKey: `key-${runId}`,
    }));
    const record: ResultRecord = {
      resultId: seed.resultId,
      serverInstanceId,
      deviceId,
      agentId: "agent-fixture",
      outcome: seed.outcome ?? "completed",
      fullText: seed.fullText ?? "Finished: two red planes and two blue planes.",
      members,
      contentHash: "0".repeat(64),
      storedAt: Date.now(),
      emittedAt: Date.now(),
    };
    const hash = toHash(record);
    parseResultRecord(hash);
    const device = this.device(deviceId);
    await this.redis.hset(device.result(resultKey), hash);
    await this.redis.set(device.resultId(seed.resultId), resultKey);
    await this.publishResolved(deviceId, serverInstanceId, seed.resultId);
    return resultKey;
  }

  async publishResolved(deviceId: string, serverInstanceId: string, resultId: string): Promise<void> {
    await appendToStream(this.redis, this.keys, STREAM_CATALOG.osResolved, {
      deviceId,
      serverInstanceId,
      resultId,
      resolvedAt: Date.now(),
    });
  }

  /** The device's Lamp is connected to `gatewayId`, a live instance unless `alive` is false (a SIGKILLed one). */
  async setPresence(deviceId: string, gatewayId = GATEWAY_ID, { alive = true } = {}): Promise<void> {
    await this.redis.set(this.device(deviceId).lampPresence, gatewayId, "PX", 60_000);
    if (alive) await this.redis.set(this.keys.lampGatewayAlive(gatewayId), "1", "PX", 60_000);
  }

  /** A Lamp socket of the device opened, as the device-gateway records it: presence first, then `lamp.connected`. */
  async lampConnected(deviceId: string, gatewayId = GATEWAY_ID): Promise<void> {
    await this.setPresence(deviceId, gatewayId);
    await appendToStream(this.redis, this.keys, STREAM_CATALOG.lampEvents, {
      kind: "lamp.connected",
      deviceId,
      gatewayId,
      at: Date.now(),
    });
  }

  /** The device's run.update log (`B:run-updates`), oldest first. */
  async runUpdates(deviceId: string): Promise<RunUpdateRecord[]> {
    const entries = await this.redis.xrange(this.device(deviceId).runUpdates, "-", "+");
    return entries.map(([, fields]) =>
      runUpdateRecordSchema.parse(JSON.parse(fields[fields.indexOf(PAYLOAD_FIELD) + 1] ?? "")),
    );
  }

  /** The device's playback line: playbacks not yet started on the Lamp nor ended, the one that may be sent first. */
  async line(deviceId: string): Promise<string[]> {
    return this.redis.lrange(this.device(deviceId).playbackLine, 0, -1);
  }

  /** Playbacks the tts-dispatcher's claim has indexed as waiting for the device's Lamp. */
  async awaitingLamp(deviceId: string): Promise<string[]> {
    return this.redis.zrange(this.device(deviceId).awaitingLamp, 0, -1);
  }

  async clearPresence(deviceId: string): Promise<void> {
    await this.redis.del(this.device(deviceId).lampPresence);
  }

  async outbox(deviceId: string, resultKey: string): Promise<OutboxEntry | undefined> {
    const fields = await this.redis.hgetall(this.device(deviceId).outbox(resultKey));
    return Object.keys(fields).length === 0 ? undefined : outboxEntrySchema.parse(fields);
  }

  async playback(deviceId: string, playbackId: string) {
    const fields = await this.redis.hgetall(this.device(deviceId).playback(playbackId));
    return Object.keys(fields).length === 0 ? undefined : playbackRecordSchema.parse(fields);
  }

  /** Every outbox entry of the deviceId (by SCAN), to count utterance intents. */
  async outboxKeys(deviceId: string): Promise<string[]> {
    return this.scan(this.device(deviceId).outbox("*"));
  }

  async playbackKeys(deviceId: string): Promise<string[]> {
    return this.scan(this.device(deviceId).playback("*"));
  }

  /** Every playback.start written to a gateway's delivery stream. */
  async deliveries(gatewayId = GATEWAY_ID): Promise<LampDelivery[]> {
    const entries = await this.redis.xrange(
      this.keys.stream(STREAM_CATALOG.lampDelivery(gatewayId).name),
      "-",
      "+",
    );
    return entries.map(([, fields]) =>
      lampDeliverySchema.parse(JSON.parse(fields[fields.indexOf(PAYLOAD_FIELD) + 1] ?? "")),
    );
  }

  async ack(
    deviceId: string,
    playbackId: string,
    state: "started" | "finished" | "interrupted" | "rejected",
  ) {
    await appendToStream(this.redis, this.keys, STREAM_CATALOG.lampEvents, {
      kind: "playback.ack",
      deviceId,
      playbackId,
      state,
      at: Date.now(),
    });
  }

  async requestRepeat(
    deviceId: string,
    resultId: string,
    playbackId = `repeat-${randomUUID()}`,
    voiceTargetId?: string,
  ): Promise<string> {
    await appendToStream(this.redis, this.keys, STREAM_CATALOG.lampEvents, {
      kind: "playback.repeat",
      deviceId,
      requestId: randomUUID(),
      playbackId,
      resultId,
      voiceTargetId,
      at: Date.now(),
    });
    return playbackId;
  }

  /**
   * The tts-dispatcher has handled everything published so far: both of its groups drained and no playback job left
   * waiting, active or delayed (so nothing more can be sent).
   */
  async dispatcherIdle(): Promise<boolean> {
    const { osResolved, lampEvents } = STREAM_CATALOG;
    const streams = await Promise.all([
      groupDrained(this.redis, this.keys.stream(osResolved.name), osResolved.consumers.ttsDispatcher.group),
      groupDrained(this.redis, this.keys.stream(lampEvents.name), lampEvents.consumers.ttsDispatcher.group),
    ]);
    const queue = this.playbackQueueKeyPrefix;
    const counts = await this.redis
      .pipeline()
      .llen(`${queue}wait`)
      .llen(`${queue}active`)
      .zcard(`${queue}delayed`)
      .zcard(`${queue}prioritized`)
      .exec();
    const jobs = (counts ?? []).reduce((sum, [error, count]) => (error ? Infinity : sum + Number(count)), 0);
    return streams.every(Boolean) && jobs === 0;
  }

  /** BullMQ jobs of the lamp-playback queue (any state), by their hash keys under the bull prefix. */
  async playbackJobIds(): Promise<string[]> {
    const prefix = this.playbackQueueKeyPrefix;
    const keys = await this.scan(`${prefix}pb-*`);
    return [...new Set(keys.map((key) => key.slice(prefix.length).split(":")[0] as string))];
  }

  /** BullMQ's keys of the lamp-playback queue under the service's bull prefix (`{<KEY_PREFIX>:bull}`). */
  private get playbackQueueKeyPrefix(): string {
    return `${this.keys.bullPrefix}:${QUEUE_CATALOG.lampPlayback.name}:`;
  }

  private async scan(pattern: string): Promise<string[]> {
    const found: string[] = [];
    let cursor = "0";
    do {
      const [next, keys] = await this.redis.scan(cursor, "MATCH", pattern, "COUNT", 1000);
      cursor = next;
      found.push(...keys);
    } while (cursor !== "0");
    return found.sort();
  }
}

/** Acks every playback.start in a gateway's delivery stream the way a healthy Lamp would (started, then finished). */
export class StreamLamp {
  private seen = 0;
  private timer: NodeJS.Timeout | undefined;
  readonly received: LampDelivery[] = [];

  constructor(
    private readonly fixture: OsStoreFixture,
    private readonly behaviour: "ack" | "silent" | "reject" = "ack",
    private readonly gatewayId = GATEWAY_ID,
  ) {}

  start(): this {
    this.timer = setInterval(() => void this.poll(), 20);
    return this;
  }

  stop(): void {
    clearInterval(this.timer);
  }

  private async poll(): Promise<void> {
    const all = await this.fixture.deliveries(this.gatewayId);
    const fresh = all.slice(this.seen);
    this.seen = all.length;
    for (const delivery of fresh) {
      this.received.push(delivery);
      if (this.behaviour === "silent") continue;
      if (this.behaviour === "reject") {
        await this.fixture.ack(delivery.deviceId, delivery.frame.playbackId, "rejected");
        continue;
      }
      await this.fixture.ack(delivery.deviceId, delivery.frame.playbackId, "started");
      await this.fixture.ack(delivery.deviceId, delivery.frame.playbackId, "finished");
    }
  }
}
