import { Redis } from "ioredis";
import { afterAll, beforeAll, expect, it } from "vitest";
import { RedisServerProcess } from "./redis-server-process.js";
import { WriteCoalescingRedis } from "./write-coalescing-redis.js";

let server: RedisServerProcess;
let observer: Redis;

beforeAll(async () => {
  server = await RedisServerProcess.start({ appendonly: false });
  observer = new Redis(server.url);
});
afterAll(async () => {
  observer.disconnect();
  await server.stop();
});

/** Socket reads this private Redis has served: one per write that reached it on its own. */
async function readsProcessed(): Promise<number> {
  const info = await observer.info("stats");
  return Number(/total_reads_processed:(\d+)/.exec(info)?.[1]);
}

async function connected(name: string): Promise<WriteCoalescingRedis> {
  const redis = new WriteCoalescingRedis(server.url, { connectionName: name });
  await new Promise<void>((resolve) => redis.once("ready", () => resolve()));
  return redis;
}

it("sends the commands of one turn in one write, each answered on its own and in order", async () => {
  const redis = await connected("coalesce-one-turn");
  const before = await readsProcessed();
  const replies = await Promise.all(Array.from({ length: 200 }, () => redis.incr("coalesce:counter")));
  const after = await readsProcessed();
  expect(replies).toEqual(Array.from({ length: 200 }, (_, index) => index + 1));
  // The observer's own INFO is one read; the 200 commands arrive as one write (one read, two if split).
  expect(after - before).toBeLessThanOrEqual(3);
  redis.disconnect();
});

it("keeps the order of commands issued in turns that follow one another", async () => {
  const redis = await connected("coalesce-turns");
  await redis.del("coalesce:list");
  const pushes: Promise<number>[] = [];
  for (let turn = 0; turn < 5; turn += 1) {
    pushes.push(redis.rpush("coalesce:list", `a${turn}`), redis.rpush("coalesce:list", `b${turn}`));
    await new Promise((resolve) => setImmediate(resolve));
  }
  await Promise.all(pushes);
  expect(await redis.lrange("coalesce:list", 0, -1)).toEqual(
    Array.from({ length: 5 }, (_, turn) => [`a${turn}`, `b${turn}`]).flat(),
  );
  redis.disconnect();
});

it("writes on the new socket after a reconnect", async () => {
  const redis = await connected("coalesce-reconnect");
  const id = await redis.client("ID");
  const reconnected = new Promise<void>((resolve) => redis.once("ready", () => resolve()));
  expect(await observer.client("KILL", "ID", String(id))).toBe(1);
  await reconnected;
  expect(await Promise.all([redis.set("coalesce:after", "1"), redis.get("coalesce:after")])).toEqual([
    "OK",
    "1",
  ]);
  expect(await redis.client("ID")).not.toBe(id);
  redis.disconnect();
});
