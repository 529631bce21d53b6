import { existsSync } from "node:fs";
import type { TestProject } from "vitest/node";
import { RedisServerProcess } from "../../libs/redis/redis-server-process.js";

declare module "vitest" {
  export interface ProvidedContext {
    redisUrl: string;
    redisSource: string;
  }
}

/** A container runtime is worth trying only when its socket or DOCKER_HOST is there; otherwise skip the wait. */
function containerRuntimeLikely(): boolean {
  return Boolean(process.env.DOCKER_HOST) || existsSync("/var/run/docker.sock");
}

async function startContainer(): Promise<{ url: string; stop: () => Promise<void> } | undefined> {
  if (!containerRuntimeLikely()) return undefined;
  try {
    const { RedisContainer } = await import("@testcontainers/redis");
    const container = await new RedisContainer("redis:7-alpine").withStartupTimeout(60_000).start();
    return { url: container.getConnectionUrl(), stop: async () => void (await container.stop()) };
  } catch {
    return undefined;
  }
}

/**
 * Every test talks to a real Redis: a Testcontainers Redis where a container runtime answers, else REDIS_URL,
 * else a redis-server from PATH on a free port in a temp dir, stopped after the run.
 */
export default async function setup(project: TestProject): Promise<() => Promise<void>> {
  const container = await startContainer();
  if (container) {
    project.provide("redisUrl", container.url);
    project.provide("redisSource", "testcontainers");
    return container.stop;
  }
  if (process.env.REDIS_URL) {
    project.provide("redisUrl", process.env.REDIS_URL);
    project.provide("redisSource", "REDIS_URL");
    return async () => undefined;
  }
  const server = await RedisServerProcess.start({ appendonly: false });
  project.provide("redisUrl", server.url);
  project.provide("redisSource", "redis-server");
  return () => server.stop();
}
