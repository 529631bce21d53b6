import { RecentMap } from "../collections/recent-map.js";
import type { RedisClient } from "../redis/redis-client.js";

/** Devices popped from the index per round trip; a sweep goes on until none is due. */
const DEVICES_PER_READ = 100;

/** Devices a writer remembers having listed (the most recent): beyond them it simply lists again. */
const LISTINGS_REMEMBERED = 10_000;

/** How long a writer trusts its own listing, at most: a tenth of a retention, never over a minute. */
export function relistAfterMsFor(shortestRetentionMs: number): number {
  return Math.min(60_000, Math.floor(shortestRetentionMs / 10));
}

/**
 * What a device's expiry step answers: when the device's oldest retained record comes due (epoch ms), or
 * undefined when it retains nothing any more.
 */
export type NextDue = number | undefined;

/**
 * One side's retention index: a zset of deviceId by when its oldest retained record comes due. Writers list a
 * device after their own write (`ZADD NX`: an earlier due time stays); the sweeper pops due devices, runs the
 * device's expiry step (one Lua on its slot) and re-lists it by the due time that step answers.
 *
 * Taking a device out races with a writer of the same device (its write, then `ZADD NX`). The sweeper's order is
 * ZREM, then a second expiry step, re-listing the device if that one found something: a writer whose ZADD NX came
 * before the ZREM (a no-op, the device being listed) wrote before it too, so the second step sees its record; a
 * writer whose ZADD NX comes after the ZREM lists the device itself. Nothing retained is ever left unlisted.
 */
export class RetentionIndex {
  /** deviceId -> when this writer last listed it (only with `relistAfterMs`), oldest first. */
  private readonly listedAt = new RecentMap<string, number>(LISTINGS_REMEMBERED);

  /**
   * `relistAfterMs` (a writer's option): a device this writer listed less than that long ago is not listed again.
   * Its write then retains something until at least the shortest retention after that listing, so the sweeper
   * cannot have found the device empty and taken it out meanwhile; keep it well under that retention. Only a
   * deletion outside retention (a revocation) can empty the device sooner, and the writer's next write after the
   * window lists it again.
   */
  constructor(
    private readonly redis: RedisClient,
    readonly key: string,
    private readonly relistAfterMs = 0,
  ) {}

  /** After a write that retains something of the device until `dueAt` (or later). */
  async list(deviceId: string, dueAt: number, now = Date.now()): Promise<void> {
    const listed = this.listedAt.get(deviceId);
    if (listed !== undefined && now - listed < this.relistAfterMs) return;
    await this.redis.zadd(this.key, "NX", dueAt, deviceId);
    if (this.relistAfterMs <= 0) return;
    this.listedAt.set(deviceId, now);
  }

  /** Expires every device due by `now`; returns how many devices it visited. */
  async sweep(expire: (deviceId: string) => Promise<NextDue>, now = Date.now()): Promise<number> {
    const visited = new Set<string>();
    for (;;) {
      const due = (
        await this.redis.zrangebyscore(this.key, "-inf", now, "LIMIT", 0, DEVICES_PER_READ)
      ).filter((deviceId) => !visited.has(deviceId));
      if (due.length === 0) return visited.size;
      for (const deviceId of due) {
        visited.add(deviceId);
        await this.settle(deviceId, await expire(deviceId), expire);
      }
    }
  }

  private async settle(
    deviceId: string,
    next: NextDue,
    expire: (deviceId: string) => Promise<NextDue>,
  ): Promise<void> {
    if (next !== undefined) {
      await this.redis.zadd(this.key, next, deviceId);
      return;
    }
    await this.redis.zrem(this.key, deviceId);
    const appeared = await expire(deviceId);
    if (appeared !== undefined) await this.redis.zadd(this.key, "NX", appeared, deviceId);
  }
}
