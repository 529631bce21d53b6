import { existsSync } from "node:fs";
import type { TestProject } from "vitest/node";
import { RedisServerProcess } from "../../libs/redis/redis-server-process.js";
import { chooseRedisSource, DEFAULT_DOCKER_SOCKET, type RedisSource } from "./redis-source.js";

declare module "vitest" {
  export interface ProvidedContext {
    redisUrl: string;
    redisSource: RedisSource["kind"];
  }
}

/** The Redis image Testcontainers starts: the one docker-compose.yml runs. */
export const REDIS_IMAGE = "redis:7.2-alpine";

async function startContainer(source: RedisSource): Promise<{ url: string; stop: () => Promise<void> }> {
  if (source.kind === "testcontainers" && source.hostOverride)
    process.env.TESTCONTAINERS_HOST_OVERRIDE = source.hostOverride;
  const { RedisContainer } = await import("@testcontainers/redis");
  try {
    const container = await new RedisContainer(REDIS_IMAGE).withStartupTimeout(60_000).start();
    return { url: container.getConnectionUrl(), stop: async () => void (await container.stop()) };
  } catch (error) {
    const message = error instanceof Error ? error.message : String(error);
    throw new Error(`Testcontainers Redis (${REDIS_IMAGE}) failed while ${source.reason}: ${message}`, {
      cause: error,
    });
  }
}

/** Every test talks to a real Redis, from the source `chooseRedisSource` names; the run says which and why. */
export default async function setup(project: TestProject): Promise<() => Promise<void>> {
  const source = chooseRedisSource(process.env, existsSync(DEFAULT_DOCKER_SOCKET));
  process.stderr.write(`test Redis: ${source.kind} (${source.reason})\n`);
  project.provide("redisSource", source.kind);
  switch (source.kind) {
    case "testcontainers": {
      const container = await startContainer(source);
      project.provide("redisUrl", container.url);
      return container.stop;
    }
    case "redis-url":
      project.provide("redisUrl", source.url);
      return async () => undefined;
    case "redis-server": {
      const server = await RedisServerProcess.start({ appendonly: false });
      project.provide("redisUrl", server.url);
      return () => server.stop();
    }
  }
}
