import { randomBytes } from "node:crypto";
import { Redis } from "ioredis";
import { inject } from "vitest";
import { createLogger } from "../../libs/logging/logger.js";
import { RedisConnections, type ClusterNode } from "../../libs/redis/connections.js";
import type { RedisClient } from "../../libs/redis/redis-client.js";
import { Keyspace } from "../../libs/redis/keyspace.js";

export const testLog = createLogger("test", process.env.TEST_LOG_LEVEL ?? "silent");

export function redisUrl(): string {
  return inject("redisUrl");
}

/** Each test file (or test) isolates its keys under a fresh prefix on the shared test Redis. */
export function uniquePrefix(label: string): string {
  return `t-${label.replace(/[^A-Za-z0-9]/g, "").slice(0, 12)}-${randomBytes(4).toString("hex")}`;
}

/** Keys under a fresh prefix on a test Redis (a single server or a cluster), and how to remove them. */
export interface TestStore {
  url: string;
  keys: Keyspace;
  connections: RedisConnections;
  redis: RedisClient;
  /** Set on a cluster: its seeds (REDIS_CLUSTER_NODES). */
  clusterNodes?: readonly ClusterNode[];
  cleanup(): Promise<void>;
}

export interface TestRedis extends TestStore {
  redis: Redis;
}

export function createTestRedis(label: string, url = redisUrl(), partitions = 1): TestRedis {
  const keys = new Keyspace(uniquePrefix(label), partitions);
  const connections = new RedisConnections(url, testLog);
  const redis = connections.command;
  if (!(redis instanceof Redis)) throw new Error("the test Redis is a single server");
  return {
    url,
    keys,
    connections,
    redis,
    async cleanup() {
      await deleteByPrefix(redis, keys.prefix);
      await connections.close();
    },
  };
}

/** What a service hosted in a test process needs to share a test store: its Redis, prefix and partitions, quiet, any port. */
export function hostedServiceEnv(t: TestStore): Record<string, string> {
  return {
    REDIS_URL: t.url,
    KEY_PREFIX: t.keys.prefix,
    STREAM_PARTITIONS: String(t.keys.partitions),
    PORT: "0",
    LOG_LEVEL: "silent",
  };
}

/** The same on a Redis Cluster: one Cluster client, keys removed from every master. */
export function createTestCluster(
  label: string,
  nodes: readonly ClusterNode[],
  partitions: number,
): TestStore {
  const keys = new Keyspace(uniquePrefix(label), partitions);
  const connections = new RedisConnections("redis://cluster", testLog, { clusterNodes: nodes });
  const redis = connections.command;
  return {
    url: `redis://${nodes[0]?.host}:${nodes[0]?.port}`,
    keys,
    connections,
    redis,
    clusterNodes: nodes,
    async cleanup() {
      if (redis instanceof Redis) await deleteByPrefix(redis, keys.prefix);
      else for (const master of redis.nodes("master")) await deleteByPrefix(master, keys.prefix);
      await connections.close();
    },
  };
}

export async function deleteByPrefix(redis: Redis, prefix: string): Promise<void> {
  let cursor = "0";
  do {
    const [next, found] = await redis.scan(cursor, "MATCH", `${prefix}:*`, "COUNT", 1000);
    cursor = next;
    // One DEL per key: on a cluster node the keys found span slots, and a multi-key DEL across slots is CROSSSLOT.
    if (found.length > 0) await redis.pipeline(found.map((key) => ["del", key])).exec();
  } while (cursor !== "0");
}

/** Polls until the condition holds or the deadline passes; returns the last value for a precise assertion. */
export async function waitFor<T>(
  probe: () => Promise<T> | T,
  accept: (value: T) => boolean,
  { timeoutMs = 10_000, intervalMs = 25 } = {},
): Promise<T> {
  const deadline = Date.now() + timeoutMs;
  let value = await probe();
  while (!accept(value) && Date.now() < deadline) {
    await new Promise((resolve) => setTimeout(resolve, intervalMs));
    value = await probe();
  }
  return value;
}

export function fresh(): Redis {
  return new Redis(redisUrl());
}
