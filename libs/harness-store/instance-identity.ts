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

  constructor(
    private readonly redis: RedisClient,
    keys: Keyspace,
  ) {
    this.key = instanceKey(keys);
  }

  async current(): Promise<string> {
    const existing = await this.redis.get(this.key);
    if (existing) return existing;
    await this.redis.set(this.key, randomUUID(), "NX");
    const created = await this.redis.get(this.key);
    if (!created) throw new Error("serverInstanceId vanished right after it was created");
    return created;
  }
}
