import { existsSync } from "node:fs";
import { Redis } from "ioredis";
import { describe, expect, inject, it } from "vitest";
import { chooseRedisSource, DEFAULT_DOCKER_SOCKET } from "./redis-source.js";

describe("the test suite's Redis source", () => {
  it("a Docker engine named by DOCKER_HOST is used through Testcontainers, even beside REDIS_URL", () => {
    const source = chooseRedisSource(
      { DOCKER_HOST: "tcp://10.0.0.5:2375", REDIS_URL: "redis://r:6379" },
      false,
    );
    expect(source).toEqual({
      kind: "testcontainers",
      reason: "a Docker engine is configured at tcp://10.0.0.5:2375",
    });
  });

  it("an engine on a local socket is reached on loopback, unless TESTCONTAINERS_HOST_OVERRIDE says otherwise", () => {
    expect(chooseRedisSource({}, true)).toEqual({
      kind: "testcontainers",
      reason: `a Docker engine is configured at unix://${DEFAULT_DOCKER_SOCKET}`,
      hostOverride: "127.0.0.1",
    });
    const given = chooseRedisSource(
      { DOCKER_HOST: "unix:///x.sock", TESTCONTAINERS_HOST_OVERRIDE: "h" },
      false,
    );
    expect(given).toMatchObject({ kind: "testcontainers", hostOverride: "h" });
  });

  it("without an engine REDIS_URL is used, and without both a redis-server from PATH", () => {
    expect(chooseRedisSource({ REDIS_URL: "redis://r:6379" }, false)).toEqual({
      kind: "redis-url",
      reason: "REDIS_URL is set",
      url: "redis://r:6379",
    });
    expect(chooseRedisSource({}, false).kind).toBe("redis-server");
  });

  it("this run uses the source the environment names, and its Redis answers", async () => {
    expect(inject("redisSource")).toBe(
      chooseRedisSource(process.env, existsSync(DEFAULT_DOCKER_SOCKET)).kind,
    );
    const redis = new Redis(inject("redisUrl"), { lazyConnect: true });
    await redis.connect();
    expect(await redis.ping()).toBe("PONG");
    await redis.quit();
  });
});
