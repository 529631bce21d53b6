import { randomUUID } from "node:crypto";
import type { RedisClient } from "../redis/redis-client.js";
import type { Keyspace } from "../redis/keyspace.js";
import { instanceKey } from "./harness-keys.js";

/**
 * The serverInstanceId: stored in Redis and created once, so a service restart keeps it and only losing the
 * Redis data changes it. Read on every use (one GET) so a running service notices a data loss at once.
 */
export class InstanceIdentity {
  private readonly key: string;
  private lastRead: { instance: string; at: number } | undefined;

  constructor(
    private readonly redis: RedisClient,
    keys: Keyspace,
  ) {
    this.key = instanceKey(keys);
  }

  async current(): Promise<string> {
    const existing = await this.redis.get(this.key);
    const instance = existing ?? (await this.create());
    this.lastRead = { instance, at: Date.now() };
    return instance;
  }

  /**
   * The instance as read at most `maxAgeMs` ago (read again when older). Only for stamping what is already decided
   * on the current instance, such as the transport envelope of logged events: after a data loss such a stamp may
   * name the old instance for that long, and the peer's next resume resyncs it. Never for minting receipts.
   */
  async recent(maxAgeMs: number): Promise<string> {
    const last = this.lastRead;
    if (last !== undefined && Date.now() - last.at < maxAgeMs) return last.instance;
    return this.current();
  }

  private async create(): Promise<string> {
    await this.redis.set(this.key, randomUUID(), "NX");
    const created = await this.redis.get(this.key);
    if (!created) throw new Error("serverInstanceId vanished right after it was created");
    return created;
  }
}
