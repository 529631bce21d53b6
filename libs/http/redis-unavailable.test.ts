import { Registry } from "prom-client";
import { afterEach, describe, expect, it } from "vitest";
import { RedisConnections } from "../redis/connections.js";
import { freePort } from "../redis/redis-server-process.js";
import { testLog } from "../../test/helpers/test-redis.js";
import { HealthRegistry } from "./health.js";
import { answerUnavailableWhileRedisDown } from "./redis-unavailable.js";
import { createServiceServer } from "./service-server.js";

const cleanups: (() => Promise<void>)[] = [];
afterEach(async () => {
  for (const cleanup of cleanups.splice(0)) await cleanup();
});

async function server() {
  const health = new HealthRegistry();
  const http = await createServiceServer({ log: testLog, metrics: new Registry(), health });
  cleanups.push(async () => {
    await http.close();
    health.close();
  });
  return http;
}

describe("HTTP while Redis is unreachable", () => {
  it("answers 503 UNAVAILABLE, not 500, when a request fails because the Redis connection went away", async () => {
    const http = await server();
    http.get("/lost", async () => {
      throw new Error("Connection is closed.");
    });
    http.get("/bug", async () => {
      throw new Error("something else");
    });
    const lost = await http.inject({ url: "/lost" });
    expect(lost.statusCode).toBe(503);
    expect(lost.json()).toMatchObject({ error: { code: "UNAVAILABLE" } });
    expect(lost.headers["retry-after"]).toBe("1");
    expect((await http.inject({ url: "/bug" })).json()).toEqual({
      error: { code: "INTERNAL", message: "internal error" },
    });
  });

  it("answers 503 before the route runs while the connection is down; probes still answer for themselves", async () => {
    const connections = new RedisConnections(`redis://127.0.0.1:${await freePort()}`, testLog);
    cleanups.push(() => connections.close());
    const http = await server();
    answerUnavailableWhileRedisDown(http, connections);
    let ran = false;
    http.get("/v1/things", async () => {
      ran = true;
      return {};
    });
    const answer = await http.inject({ url: "/v1/things?x=1" });
    expect(answer.statusCode).toBe(503);
    expect(answer.json()).toMatchObject({ error: { code: "UNAVAILABLE" } });
    expect(ran).toBe(false);
    expect((await http.inject({ url: "/healthz" })).statusCode).toBe(200);
  });
});
