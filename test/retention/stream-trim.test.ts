import { afterEach, beforeEach, describe, expect, it } from "vitest";
import { z } from "zod";
import { createMetricsRegistry } from "../../libs/metrics/registry.js";
import { StreamConsumer } from "../../libs/streams/stream-consumer.js";
import { appendToStream, ensureConsumerGroup } from "../../libs/streams/stream-writer.js";
import { trimConsumedEntries } from "../../libs/streams/stream-trim.js";
import { createTestRedis, testLog, waitFor, type TestRedis } from "../helpers/test-redis.js";

/**
 * Issue 16 item 2: a pipeline stream keeps only what some consumer group may still ask for. Entries are added in
 * several stream nodes' worth (a node holds 100 by default and `MINID ~` removes whole nodes).
 */
const stream = { name: "test.trim", schema: z.object({ n: z.number() }) };
let t: TestRedis;
let key: string;

beforeEach(() => {
  t = createTestRedis("stream-trim");
  key = t.keys.stream(stream.name);
});
afterEach(async () => t.cleanup());

async function append(count: number): Promise<string[]> {
  const ids: string[] = [];
  for (let n = 0; n < count; n += 1) ids.push(await appendToStream(t.redis, t.keys, stream, { n }));
  return ids;
}

/** Reads `count` entries as `consumer` of `group`, leaving them pending. */
async function readPending(group: string, count: number): Promise<string[]> {
  const reply = (await t.redis.xreadgroup("GROUP", group, "c", "COUNT", count, "STREAMS", key, ">")) as
    [string, [string, string[]][]][] | null;
  return (reply?.[0]?.[1] ?? []).map(([id]) => id);
}

const remainingIds = async () => (await t.redis.xrange(key, "-", "+")).map(([id]) => id);

describe("trimConsumedEntries", () => {
  it("never removes an entry pending for a group, nor one a slower group has not been delivered", async () => {
    await ensureConsumerGroup(t.redis, key, "fast");
    await ensureConsumerGroup(t.redis, key, "slow");
    const ids = await append(1_000);
    const fastRead = await readPending("fast", 1_000);
    await t.redis.xack(key, "fast", ...fastRead.slice(0, 900));
    const slowRead = await readPending("slow", 600);
    await t.redis.xack(key, "slow", ...slowRead.slice(0, 300), ...slowRead.slice(400));

    const outcome = await trimConsumedEntries(t.redis, key);

    // Oldest still needed: entry 300 (pending for slow); fast holds 900..999 pending, slow was delivered to 599.
    expect(outcome.minId).toBe(ids[300]);
    const remaining = await remainingIds();
    expect(remaining.length).toBeLessThan(1_000);
    expect(remaining).toEqual(ids.slice(ids.length - remaining.length));
    expect(remaining[0]! <= ids[300]!).toBe(true);
    expect(outcome.removed).toBe(1_000 - remaining.length);
  });

  it("trims everything every group acked, and leaves a stream without groups alone", async () => {
    const ungrouped = t.keys.stream("test.nogroup");
    await t.redis.xadd(ungrouped, "*", "payload", "{}");
    expect(await trimConsumedEntries(t.redis, ungrouped)).toEqual({ minId: undefined, removed: 0 });
    expect(await trimConsumedEntries(t.redis, t.keys.stream("test.absent"))).toEqual({
      minId: undefined,
      removed: 0,
    });

    await ensureConsumerGroup(t.redis, key, "only");
    const ids = await append(500);
    await t.redis.xack(key, "only", ...(await readPending("only", 500)));
    const outcome = await trimConsumedEntries(t.redis, key);
    expect(outcome.minId).toBe(`${ids[499]!.split("-")[0]}-${Number(ids[499]!.split("-")[1]) + 1}`);
    expect(await t.redis.xlen(key)).toBeLessThan(100);
  });

  it("a running consumer keeps its stream and its dead letters bounded (STREAM_TRIM_INTERVAL_MS)", async () => {
    const handled: number[] = [];
    const consumer = new StreamConsumer({
      connections: t.connections,
      keys: t.keys,
      stream,
      group: "workers",
      consumer: "w1",
      settings: {
        batchSize: 100,
        blockMs: 100,
        claimMinIdleMs: 30_000,
        maxDeliveries: 1,
        retryDelayMs: 10,
        trimIntervalMs: 100,
        deadLetterMaxLength: 150,
      },
      log: testLog,
      metrics: createMetricsRegistry(),
      handle: async ({ payload }) => {
        if (payload.n % 2 === 1) throw new Error("odd");
        handled.push(payload.n);
      },
    });
    await consumer.start();
    try {
      await append(2_000);
      await waitFor(
        () => handled.length,
        (count) => count === 1_000,
        { timeoutMs: 60_000 },
      );
      const length = await waitFor(
        () => t.redis.xlen(key),
        (count) => count < 100,
        { timeoutMs: 30_000 },
      );
      expect(length).toBeLessThan(100);
      // 1,000 odd entries were dead-lettered; about the newest 150 stay (a stream node of slack).
      const letters = await waitFor(
        () => t.redis.xlen(t.keys.deadLetter(stream.name)),
        (count) => count <= 250,
        { timeoutMs: 30_000 },
      );
      expect(letters).toBeGreaterThanOrEqual(150);
      expect(letters).toBeLessThanOrEqual(250);
    } finally {
      await consumer.stop();
    }
  }, 120_000);
});
