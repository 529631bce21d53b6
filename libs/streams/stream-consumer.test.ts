import { afterEach, beforeEach, describe, expect, it } from "vitest";
import { z } from "zod";
import { createMetricsRegistry } from "../metrics/registry.js";
import type { StreamConsumerSettings } from "../config/consumer-settings.js";
import { StreamConsumer, type StreamConsumerOptions, type StreamEntry } from "./stream-consumer.js";
import { appendToStream } from "./stream-writer.js";
import { newestDeadLetters, redriveDeadLetter, redriveKey } from "./dead-letters.js";
import { RedisConnections } from "../redis/connections.js";
import { RedisServerProcess } from "../redis/redis-server-process.js";
import { TsProcess } from "../../test/helpers/child-process.js";
import { createTestRedis, testLog, waitFor, type TestRedis } from "../../test/helpers/test-redis.js";

const stream = { name: "test.jobs", schema: z.object({ businessId: z.string() }) };
const ownedSchema = z.object({ deviceId: z.string(), step: z.number() });
const fast: StreamConsumerSettings = {
  batchSize: 10,
  blockMs: 100,
  claimMinIdleMs: 300,
  maxDeliveries: 3,
  retryDelayMs: 20,
};

let t: TestRedis;
const running: Array<{ stop(): Promise<void> }> = [];
const children: TsProcess[] = [];

beforeEach(() => {
  t = createTestRedis("consumer");
});

afterEach(async () => {
  for (const consumer of running.splice(0)) await consumer.stop();
  for (const child of children.splice(0)) await child.kill();
  await t.cleanup();
});

type Job = StreamEntry<{ businessId: string }>;

function consumerOf(
  name: string,
  handle: (id: string) => Promise<void>,
  settings = fast,
  handleBatch?: (entries: Job[]) => Promise<Job[]>,
) {
  const consumer = new StreamConsumer({
    ...(handleBatch ? { handleBatch } : {}),
    connections: t.connections,
    keys: t.keys,
    stream,
    group: "workers",
    consumer: name,
    settings,
    log: testLog,
    metrics: createMetricsRegistry(),
    handle: ({ payload }) => handle(payload.businessId),
  });
  running.push(consumer);
  return consumer;
}

/** A started consumer "c1" of group "workers" on an owned stream (one owner's entries in order), stopped after the test. */
async function startOwnedConsumer<S extends z.ZodType>(
  options: Pick<StreamConsumerOptions<S>, "stream" | "ownerOf" | "handle" | "onDeadLetter">,
): Promise<StreamConsumer<S>> {
  const consumer = new StreamConsumer({
    connections: t.connections,
    keys: t.keys,
    group: "workers",
    consumer: "c1",
    settings: fast,
    log: testLog,
    metrics: createMetricsRegistry(),
    ...options,
  });
  running.push(consumer);
  await consumer.start();
  return consumer;
}

/** An idempotent handler keyed on business identity, counting attempts so double processing would show. */
const idempotentHandler =
  (consumerName: string, delayMs = 0) =>
  async (businessId: string) => {
    await t.redis.incr(t.keys.key("attempts", businessId));
    if (delayMs) await new Promise((resolve) => setTimeout(resolve, delayMs));
    await t.redis.set(t.keys.key("done", businessId), consumerName, "NX");
  };

async function addJobs(count: number): Promise<string[]> {
  const ids = Array.from({ length: count }, (_, index) => `job-${index}`);
  for (const businessId of ids) await appendToStream(t.redis, t.keys, stream, { businessId });
  return ids;
}

const doneCount = async () => (await t.redis.keys(`${t.keys.prefix}:done:*`)).length;
const pendingCount = async (streamName = stream.name) =>
  Number(((await t.redis.xpending(t.keys.stream(streamName), "workers")) as [number])[0]);

function spawnChild(name: string, delayMs: number): TsProcess {
  const child = new TsProcess("test/fixtures/stream-consumer-child.ts", {
    REDIS_URL: t.url,
    KEY_PREFIX: t.keys.prefix,
    CONSUMER_NAME: name,
    HANDLER_DELAY_MS: String(delayMs),
  });
  children.push(child);
  return child;
}

describe("stream consumer", () => {
  it("processes every entry once and acks it", async () => {
    const ids = await addJobs(25);
    await consumerOf("c1", idempotentHandler("c1")).start();
    expect(await waitFor(doneCount, (n) => n === ids.length)).toBe(25);
    expect(await waitFor(pendingCount, (n) => n === 0)).toBe(0);
  });

  it("redelivers a SIGKILLed consumer's in-flight batch to the same consumer after restart (own pending first)", async () => {
    await addJobs(8);
    const child = spawnChild("stable-name", 300);
    await child.waitForOutput("consumer-ready");
    await waitFor(doneCount, (n) => n >= 2, { timeoutMs: 15_000 });
    await child.kill("SIGKILL");
    const doneBefore = await doneCount();
    expect(doneBefore).toBeLessThan(8);
    expect(await pendingCount()).toBeGreaterThan(0);

    const again = spawnChild("stable-name", 0);
    await again.waitForOutput("consumer-ready");
    expect(await waitFor(doneCount, (n) => n === 8, { timeoutMs: 15_000 })).toBe(8);
    expect(await waitFor(pendingCount, (n) => n === 0)).toBe(0);
  });

  it("lets another consumer reclaim a dead consumer's stale entries, with no double processing visible", async () => {
    await addJobs(6);
    const child = spawnChild("doomed", 400);
    await child.waitForOutput("consumer-ready");
    await waitFor(doneCount, (n) => n >= 1, { timeoutMs: 15_000 });
    await child.kill("SIGKILL");

    await consumerOf("survivor", idempotentHandler("survivor")).start();
    expect(await waitFor(doneCount, (n) => n === 6, { timeoutMs: 15_000 })).toBe(6);
    expect(await waitFor(pendingCount, (n) => n === 0)).toBe(0);
    const owners = await Promise.all(
      Array.from({ length: 6 }, (_, index) => t.redis.get(t.keys.key("done", `job-${index}`))),
    );
    expect(owners.filter((owner) => owner === "survivor").length).toBeGreaterThan(0);
    expect(owners.every((owner) => owner === "doomed" || owner === "survivor")).toBe(true);
  });

  it("dead-letters an entry after maxDeliveries failures with its error, and keeps going", async () => {
    await appendToStream(t.redis, t.keys, stream, { businessId: "poison" });
    await addJobs(3);
    let attempts = 0;
    await consumerOf("c1", async (businessId) => {
      if (businessId === "poison") {
        attempts += 1;
        throw new Error("engine exploded");
      }
      await idempotentHandler("c1")(businessId);
    }).start();

    const dlq = t.keys.deadLetter(stream.name);
    const dead = await waitFor(
      () => t.redis.xrange(dlq, "-", "+"),
      (entries) => entries.length === 1,
    );
    expect(dead).toHaveLength(1);
    const fields = dead[0]?.[1] ?? [];
    expect(fields).toContain("engine exploded");
    expect(fields[fields.indexOf("deliveries") + 1]).toBe("3");
    expect(attempts).toBe(3);
    expect(await waitFor(doneCount, (n) => n === 3)).toBe(3);
    expect(await waitFor(pendingCount, (n) => n === 0)).toBe(0);
  });

  it("dead-letters malformed and schema-invalid payloads at once, without calling the handler", async () => {
    const key = t.keys.stream(stream.name);
    await t.redis.xadd(key, "*", "payload", "{not json");
    await t.redis.xadd(key, "*", "payload", JSON.stringify({ businessId: 42 }));
    await t.redis.xadd(key, "*", "other", "x");
    let calls = 0;
    await consumerOf("c1", async () => void (calls += 1)).start();
    const dead = await waitFor(
      () => t.redis.xrange(t.keys.deadLetter(stream.name), "-", "+"),
      (e) => e.length === 3,
    );
    expect(dead.map(([, fields]) => fields[fields.indexOf("error") + 1])).toEqual([
      expect.stringMatching(/^INVALID_PAYLOAD: malformed JSON/),
      expect.stringMatching(/^INVALID_PAYLOAD: businessId/),
      expect.stringMatching(/^INVALID_PAYLOAD: missing field/),
    ]);
    expect(calls).toBe(0);
  });

  it("drains gracefully on stop: the in-flight entry finishes and is acked", async () => {
    await addJobs(1);
    const consumer = consumerOf("c1", idempotentHandler("c1", 400));
    await consumer.start();
    await waitFor(
      () => t.redis.get(t.keys.key("attempts", "job-0")),
      (value) => value === "1",
    );
    running.splice(running.indexOf(consumer), 1);
    await consumer.stop();
    expect(await doneCount()).toBe(1);
    expect(await pendingCount()).toBe(0);
  });

  it("drains gracefully on SIGTERM in a separate process", async () => {
    await addJobs(2);
    const child = spawnChild("term", 300);
    await child.waitForOutput("consumer-ready");
    await waitFor(
      () => t.redis.get(t.keys.key("attempts", "job-0")),
      (value) => value === "1",
    );
    expect(await child.kill("SIGTERM")).toBe(0);
    expect(child.log).toContain("consumer-drained");
    expect(await pendingCount()).toBe(0);
  });

  it("with ownerOf, handles other owners' entries of a read while one owner's waits, each owner's in order", async () => {
    const owned = { name: "test.owned", schema: z.object({ owner: z.string(), step: z.number() }) };
    for (const [owner, step] of [
      ["a", 1],
      ["b", 1],
      ["a", 2],
      ["b", 2],
    ] as const)
      await appendToStream(t.redis, t.keys, owned, { owner, step });
    const seen: string[] = [];
    let releaseA1: () => void = () => undefined;
    const a1Held = new Promise<void>((resolve) => (releaseA1 = resolve));
    await startOwnedConsumer({
      stream: owned,
      ownerOf: ({ owner }) => owner,
      handle: async ({ payload: { owner, step } }) => {
        seen.push(`${owner}${step} start`);
        if (owner === "a" && step === 1) await a1Held;
        if (owner === "b" && step === 2) releaseA1();
        seen.push(`${owner}${step} end`);
      },
    });
    await waitFor(
      async () => seen.length,
      (n) => n === 8,
    );
    // a1 holds only a's queue: b's two entries run meanwhile, and a2 starts only after a1 ended.
    expect(seen).toEqual([
      "a1 start",
      "b1 start",
      "b1 end",
      "b2 start",
      "b2 end",
      "a1 end",
      "a2 start",
      "a2 end",
    ]);
    expect(
      await waitFor(
        () => pendingCount(owned.name),
        (n) => n === 0,
      ),
    ).toBe(0);
  });

  it("hands each read batch to the batch handler and acks all its entries", async () => {
    const ids = await addJobs(25);
    const batchSizes: number[] = [];
    let individualCalls = 0;
    await consumerOf(
      "c1",
      async () => void (individualCalls += 1),
      fast,
      async (entries) => {
        batchSizes.push(entries.length);
        for (const { payload } of entries) await idempotentHandler("c1")(payload.businessId);
        return [];
      },
    ).start();
    expect(await waitFor(doneCount, (n) => n === ids.length)).toBe(25);
    expect(await waitFor(pendingCount, (n) => n === 0)).toBe(0);
    expect(batchSizes.reduce((sum, size) => sum + size, 0)).toBe(25);
    expect(Math.max(...batchSizes)).toBe(fast.batchSize);
    expect(individualCalls).toBe(0);
  });

  it("hands the entries a batch handler left undone to the per-entry handler, once each", async () => {
    await addJobs(6);
    const individually: string[] = [];
    await consumerOf(
      "c1",
      async (businessId) => {
        individually.push(businessId);
        await idempotentHandler("c1")(businessId);
      },
      fast,
      async (entries) => {
        const undone = entries.filter(({ payload }) => payload.businessId.endsWith("3"));
        for (const { payload } of entries)
          if (!payload.businessId.endsWith("3")) await idempotentHandler("c1")(payload.businessId);
        return undone;
      },
    ).start();
    expect(await waitFor(doneCount, (n) => n === 6)).toBe(6);
    expect(await waitFor(pendingCount, (n) => n === 0)).toBe(0);
    expect(individually).toEqual(["job-3"]);
  });

  it("falls back to per-entry handling when the batch handler fails: a poison entry dead-letters only itself", async () => {
    for (const businessId of ["job-0", "job-1", "poison", "job-2", "job-3"])
      await appendToStream(t.redis, t.keys, stream, { businessId });
    let batchCalls = 0;
    let poisonAttempts = 0;
    await consumerOf(
      "c1",
      async (businessId) => {
        if (businessId === "poison") {
          poisonAttempts += 1;
          throw new Error("engine exploded");
        }
        await idempotentHandler("c1")(businessId);
      },
      fast,
      async () => {
        batchCalls += 1;
        throw new Error("batch failed");
      },
    ).start();
    const dead = await waitFor(
      () => t.redis.xrange(t.keys.deadLetter(stream.name), "-", "+"),
      (entries) => entries.length === 1,
    );
    const fields = dead[0]?.[1] ?? [];
    expect(JSON.parse(fields[1] ?? "")).toEqual({ businessId: "poison" });
    expect(fields[fields.indexOf("error") + 1]).toBe("engine exploded");
    expect(fields[fields.indexOf("deliveries") + 1]).toBe("3");
    expect(poisonAttempts).toBe(3);
    expect(await waitFor(doneCount, (n) => n === 4)).toBe(4);
    expect(await waitFor(pendingCount, (n) => n === 0)).toBe(0);
    expect(batchCalls).toBe(1);
    expect(Number(await t.redis.get(t.keys.key("attempts", "job-0")))).toBe(1);
  });

  it("retries a failing entry in place: its owner's later entries wait behind it, and the letter says why and whom", async () => {
    const owned = { name: "test.owned", partitionBy: "deviceId" as const, schema: ownedSchema };
    for (const [deviceId, step] of [
      ["a", 1],
      ["a", 2],
      ["b", 1],
    ] as const)
      await appendToStream(t.redis, t.keys, owned, { deviceId, step });
    const seen: string[] = [];
    const lost: string[] = [];
    await startOwnedConsumer({
      stream: owned,
      ownerOf: ({ deviceId }) => deviceId,
      handle: async ({ payload: { deviceId, step } }) => {
        seen.push(`${deviceId}${step}`);
        if (deviceId === "a" && step === 1) throw Object.assign(new Error("cannot"), { code: "NOT_NOW" });
      },
      onDeadLetter: async ({ payload }, failure) =>
        void lost.push(`${payload.deviceId}${payload.step} ${failure.code}`),
    });
    const [letter] = await waitFor(
      async () => (await newestDeadLetters(t.redis, t.keys, owned.name, 10)).entries,
      (entries) => entries.length === 1,
    );
    await waitFor(
      async () => seen.length,
      (n) => n === 5,
    );
    expect(seen.filter((step) => step.startsWith("a"))).toEqual(["a1", "a1", "a1", "a2"]);
    expect(lost).toEqual(["a1 NOT_NOW"]);
    expect(letter).toMatchObject({ code: "NOT_NOW", error: "cannot", affects: "deviceId a", deliveries: 3 });
    expect(
      await waitFor(
        () => pendingCount(owned.name),
        (n) => n === 0,
      ),
    ).toBe(0);
  });

  it("waits out Redis refusing writes (maxmemory, noeviction) without dead-lettering, then handles every entry once", async () => {
    const own = await RedisServerProcess.start();
    const connections = new RedisConnections(own.url, testLog);
    try {
      const redis = connections.command;
      for (const businessId of ["job-0", "job-1", "job-2"])
        await appendToStream(redis, t.keys, stream, { businessId });
      let refusals = 0;
      let squeeze: () => void = () => undefined;
      const squeezed = new Promise<void>((resolve) => (squeeze = resolve));
      const consumer = new StreamConsumer({
        connections,
        keys: t.keys,
        stream,
        group: "workers",
        consumer: "c1",
        settings: fast,
        log: testLog,
        metrics: createMetricsRegistry(),
        handle: async ({ payload }) => {
          await squeezed;
          try {
            await redis.set(t.keys.key("done", payload.businessId), "x".repeat(10_000));
          } catch (error) {
            refusals += 1;
            throw error;
          }
        },
      });
      await consumer.start();
      const used = Number(/used_memory:(\d+)/.exec(await redis.info("memory"))?.[1]);
      await redis.config("SET", "maxmemory", String(used));
      squeeze();
      await waitFor(
        async () => refusals,
        (n) => n > 2 * fast.maxDeliveries,
      );
      await redis.config("SET", "maxmemory", "0");
      const done = async () => (await redis.keys(`${t.keys.prefix}:done:*`)).length;
      expect(await waitFor(done, (n) => n === 3)).toBe(3);
      expect(await redis.xlen(t.keys.deadLetter(stream.name))).toBe(0);
      const pending = async () =>
        Number(((await redis.xpending(t.keys.stream(stream.name), "workers")) as [number])[0]);
      expect(await waitFor(pending, (n) => n === 0)).toBe(0);
      await consumer.stop();
    } finally {
      await connections.close();
      await own.stop();
    }
  });

  it("hands a redriven dead letter to its consumer before the stream's backlog", async () => {
    await appendToStream(t.redis, t.keys, stream, { businessId: "poison" });
    let healed = false;
    let release: () => void = () => undefined;
    const held = new Promise<void>((resolve) => (release = resolve));
    const order: string[] = [];
    const oneAtATime = { ...fast, batchSize: 1 };
    await consumerOf(
      "c1",
      async (businessId) => {
        if (businessId === "poison" && !healed) throw new Error("not yet");
        if (businessId === "job-0") {
          await t.redis.incr(t.keys.key("attempts", businessId));
          await held;
        }
        order.push(businessId);
      },
      oneAtATime,
    ).start();
    const [letter] = await waitFor(
      async () => (await newestDeadLetters(t.redis, t.keys, stream.name, 1)).entries,
      (entries) => entries.length === 1,
    );
    healed = true;
    await addJobs(3);
    await waitFor(
      () => t.redis.get(t.keys.key("attempts", "job-0")),
      (attempts) => attempts === "1",
    );
    await redriveDeadLetter(t.redis, t.keys, stream.name, letter?.id ?? "");
    release();
    await waitFor(
      async () => order.length,
      (n) => n === 4,
    );
    expect(order).toEqual(["job-0", "poison", "job-1", "job-2"]);
    expect(await newestDeadLetters(t.redis, t.keys, stream.name, 1)).toMatchObject({ total: 0 });
    expect(await t.redis.xlen(redriveKey(t.keys, stream.name))).toBe(0);
  });
});
