import type { RedisClient } from "../redis/redis-client.js";
import type { Keyspace } from "../redis/keyspace.js";
import { RetentionIndex } from "./retention-index.js";

/** The OS side's retention index (`<p>:os:retention-due`): devices whose OS store retains something. */
export const osRetentionIndex = (redis: RedisClient, keys: Keyspace, relistAfterMs?: number) =>
  new RetentionIndex(redis, keys.key("os", "retention-due"), relistAfterMs);

/** The Harness side's retention index (`<p>:h:retention-due`): devices whose Harness store retains something. */
export const harnessRetentionIndex = (redis: RedisClient, keys: Keyspace, relistAfterMs?: number) =>
  new RetentionIndex(redis, keys.key("h", "retention-due"), relistAfterMs);
