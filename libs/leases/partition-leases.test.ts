import { afterEach, beforeEach, expect, it } from "vitest";
import { createTestRedis, testLog, type TestRedis } from "../../test/helpers/test-redis.js";
import { PartitionLeases } from "./partition-leases.js";

const PARTITIONS = 4;

let t: TestRedis;
beforeEach(() => {
  t = createTestRedis("partition-leases");
});
afterEach(() => t.cleanup());

/** One replica over PARTITIONS partitions whose work records how many of its stops run at once. */
function replica() {
  const stops = { running: 0, most: 0, graceful: [] as boolean[] };
  let allHeld!: () => void;
  const held = new Promise<void>((resolve) => (allHeld = resolve));
  const leases = new PartitionLeases({
    redis: t.redis,
    leaseKey: (partition) => t.keys.key("lease", String(partition)),
    replicasKey: t.keys.key("replicas"),
    owner: "replica-1",
    partitions: PARTITIONS,
    ttlMs: 3_000,
    log: testLog,
    changed: (change, count) => {
      if (change === "acquired" && count === PARTITIONS) allHeld();
    },
    own: () =>
      Promise.resolve({
        stop: async (graceful: boolean) => {
          stops.running += 1;
          stops.most = Math.max(stops.most, stops.running);
          stops.graceful.push(graceful);
          await new Promise((resolve) => setImmediate(resolve));
          stops.running -= 1;
        },
      }),
  });
  return { leases, held, stops };
}

it("a lone replica takes every partition, and stopping hands them all back at once, gracefully", async () => {
  const { leases, held, stops } = replica();
  leases.start();
  await held;
  expect(leases.partitionsHeld()).toEqual([0, 1, 2, 3]);
  const leaseKeys = [0, 1, 2, 3].map((partition) => t.keys.key("lease", String(partition)));
  expect(await t.redis.mget(leaseKeys)).toEqual(Array(PARTITIONS).fill("replica-1"));

  await leases.stop();

  expect(stops).toEqual({ running: 0, most: PARTITIONS, graceful: Array(PARTITIONS).fill(true) });
  expect(leases.partitionsHeld()).toEqual([]);
  expect(await t.redis.exists(...leaseKeys)).toBe(0);
  expect(await t.redis.zcard(t.keys.key("replicas"))).toBe(0);
});
