import { randomBytes } from "node:crypto";
import { Redis } from "ioredis";
import { inject } from "vitest";
import { createLogger } from "../../libs/logging/logger.js";
import { RedisConnections } from "../../libs/redis/connections.js";
import { Keyspace } from "../../libs/redis/keyspace.js";

export const testLog = createLogger("test", process.env.TEST_LOG_LEVEL ?? "silent");

export function redisUrl(): string {
  return inject("redisUrl");
}

/** Each test file (or test) isolates its keys under a fresh prefix on the shared test Redis. */
export function uniquePrefix(label: string): string {
  return `t-${label.replace(/[^A-Za-z0-9]/g, "").slice(0, 12)}-${randomBytes(4).toString("hex")}`;
}

export interface TestRedis {
  url: string;
  keys: Keyspace;
  connections: RedisConnections;
  redis: Redis;
  cleanup(): Promise<void>;
}

export function createTestRedis(label: string, url = redisUrl()): TestRedis {
  const keys = new Keyspace(uniquePrefix(label));
  const connections = new RedisConnections(url, testLog);
  return {
    url,
    keys,
    connections,
    redis: connections.command,
    async cleanup() {
      await deleteByPrefix(connections.command, keys.prefix);
      await connections.close();
    },
  };
}

export async function deleteByPrefix(redis: Redis, prefix: string): Promise<void> {
  let cursor = "0";
  do {
    const [next, found] = await redis.scan(cursor, "MATCH", `${prefix}:*`, "COUNT", 1000);
    cursor = next;
    if (found.length > 0) await redis.del(...found);
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
