import type { RedisClient } from "../redis/redis-client.js";
import type { Logger } from "../logging/logger.js";
import { errorMessage } from "../errors/error-message.js";
import { holdLease, type LeaseStep } from "./lease-step.js";

/** The work of one partition this replica holds; `stop(graceful)` ends it (graceful: handing it over). */
export interface PartitionWork {
  stop(graceful: boolean): Promise<void>;
}

export type PartitionChange = "acquired" | "released" | "lost";

interface HeldPartition {
  work: PartitionWork;
  /** Past this instant (last successful renewal started + TTL − margin) the lease may be someone else's. */
  validUntil: number;
}

/**
 * Shares `partitions` work partitions between the replicas of one role (router replicas over device partitions, a
 * consumer group's replicas over a stream's partitions): each replica heartbeats into the role's replica set
 * (`replicasKey`), takes free partitions up to its fair share (⌈partitions ÷ live replicas⌉, `leaseKey(k)`, SET NX
 * PX, renewed every round) and hands surplus ones back one per round, so a replica that joins gets its share and one
 * that dies has its partitions taken over after the TTL. A renewal refused, or none succeeding for most of the TTL,
 * drops that partition's work at once.
 */
export class PartitionLeases {
  private readonly held = new Map<number, HeldPartition>();
  private timer: NodeJS.Timeout | undefined;
  private ticking: Promise<void> = Promise.resolve();
  private stopped = false;
  private lastRoundAt = Date.now();

  constructor(
    private readonly options: {
      redis: RedisClient;
      /** The lease of partition k (a key in that partition's slot). */
      leaseKey: (partition: number) => string;
      /** The role's replica set: zset of owners by heartbeat expiry. */
      replicasKey: string;
      owner: string;
      partitions: number;
      ttlMs: number;
      log: Logger;
      own: (partition: number) => Promise<PartitionWork>;
      changed: (change: PartitionChange, held: number) => void;
    },
  ) {}

  get intervalMs(): number {
    return Math.max(Math.min(Math.floor(this.options.ttlMs / 3), 1_000), 50);
  }

  start(): void {
    this.schedule(0);
  }

  /** True while lease rounds keep running (a stuck round would stop renewals and hand partitions away). */
  isAlive(now = Date.now()): boolean {
    return now - this.lastRoundAt < this.intervalMs * 3 + 5_000;
  }

  /** The partitions held now, in order. */
  partitionsHeld(): number[] {
    return [...this.held.keys()].sort((a, b) => a - b);
  }

  async stop(): Promise<void> {
    this.stopped = true;
    clearTimeout(this.timer);
    await this.ticking;
    // Side by side: each partition's work may wait out a blocking read, and a replica holding many must still stop
    // within its grace period.
    await Promise.all(this.partitionsHeld().map((partition) => this.release(partition)));
    await this.options.redis.zrem(this.options.replicasKey, this.options.owner).catch(() => 0);
  }

  private schedule(delayMs: number): void {
    this.timer = setTimeout(() => {
      this.ticking = this.tick().finally(() => {
        if (!this.stopped) this.schedule(this.intervalMs);
      });
    }, delayMs);
  }

  private async tick(): Promise<void> {
    this.lastRoundAt = Date.now();
    try {
      await this.expireUnrenewed();
      const share = Math.ceil(this.options.partitions / (await this.liveReplicas()));
      for (const partition of this.partitionsHeld()) {
        if (this.stopped) return;
        await this.renew(partition);
      }
      const surplus = this.partitionsHeld().slice(share);
      if (surplus.length > 0) await this.release(surplus[surplus.length - 1] as number);
      else await this.acquireUpTo(share);
    } catch (error) {
      this.options.log.warn({ err: errorMessage(error) }, "partition lease round failed");
    }
  }

  /** Heartbeats this replica and counts the live ones (itself included). */
  private async liveReplicas(): Promise<number> {
    const { redis, replicasKey: key, owner, ttlMs } = this.options;
    const now = Date.now();
    const [, , counted] =
      (await redis
        .multi()
        .zadd(key, now + ttlMs, owner)
        .zremrangebyscore(key, "-inf", now)
        .zcard(key)
        .exec()) ?? [];
    const live = counted?.[1];
    return typeof live === "number" && live > 0 ? live : 1;
  }

  /** Partitions starting at an offset of this owner's, so replicas starting together try different ones first. */
  private async acquireUpTo(share: number): Promise<void> {
    const { partitions, owner } = this.options;
    const offset = [...owner].reduce((sum, char) => sum + char.charCodeAt(0), 0) % partitions;
    for (let step = 0; step < partitions && this.held.size < share; step += 1) {
      if (this.stopped) return;
      const partition = (offset + step) % partitions;
      if (this.held.has(partition)) continue;
      const startedAt = Date.now();
      if (!(await this.lease(partition, "acquire"))) continue;
      this.options.log.info({ partition }, "partition lease acquired");
      const work = await this.options.own(partition);
      this.held.set(partition, { work, validUntil: this.validFrom(startedAt) });
      this.options.changed("acquired", this.held.size);
    }
  }

  private async renew(partition: number): Promise<void> {
    const held = this.held.get(partition);
    if (!held) return;
    const startedAt = Date.now();
    if (await this.lease(partition, "renew")) {
      held.validUntil = this.validFrom(startedAt);
      return;
    }
    await this.drop(partition, "partition lease lost; its work dropped");
  }

  /** Renewals failing (Redis unreachable) for most of the TTL: the lease may have passed on, so stop serving. */
  private async expireUnrenewed(): Promise<void> {
    const now = Date.now();
    for (const [partition, held] of this.held)
      if (now > held.validUntil) await this.drop(partition, "partition lease not renewed in time; dropped");
  }

  private async drop(partition: number, message: string): Promise<void> {
    const held = this.held.get(partition);
    if (!held) return;
    this.held.delete(partition);
    this.options.log.warn({ partition }, message);
    await held.work.stop(false);
    this.options.changed("lost", this.held.size);
  }

  /** Hands a partition over: its work ends (gracefully), then the partition lease goes. */
  private async release(partition: number): Promise<void> {
    const held = this.held.get(partition);
    if (!held) return;
    this.held.delete(partition);
    await held.work.stop(true);
    await this.lease(partition, "release").catch(() => false);
    this.options.log.info({ partition }, "partition lease released");
    this.options.changed("released", this.held.size);
  }

  private validFrom(renewalStartedAt: number): number {
    return renewalStartedAt + this.options.ttlMs - this.intervalMs;
  }

  private lease(partition: number, step: LeaseStep): Promise<boolean> {
    const { redis, leaseKey, owner, ttlMs } = this.options;
    return holdLease(redis, leaseKey(partition), owner, ttlMs, step);
  }
}
