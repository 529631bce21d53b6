import { afterEach, beforeEach, describe, expect, it } from "vitest";
import { partitionOf } from "../redis/partitions.js";
import { consumerGroupsOf } from "../streams/group-info.js";
import { appendToStream, ensurePartitionGroups } from "../streams/stream-writer.js";
import { hostServices, type HostedServices } from "./service-host.js";
import { TsProcess } from "../../test/helpers/child-process.js";
import { createTestRedis, waitFor, type TestRedis } from "../../test/helpers/test-redis.js";
import {
  handledKey,
  inOrderReader,
  ORDERED_GROUP,
  orderedStream,
} from "../../test/fixtures/in-order-reader.js";

/**
 * A stream read in order (catalog `reading.inOrder`, e.g. harness.evidence): however many replicas of the group run,
 * each partition is read by one of them at a time, so a device's entries are handled one after the other in stream
 * order; a replica that dies has its partitions, and the entries it left pending, taken over.
 */
const PARTITIONS = 4;
const LEASE_TTL_MS = 600;

let t: TestRedis;
const hosts: HostedServices[] = [];
const children: TsProcess[] = [];

beforeEach(async () => {
  t = createTestRedis("in-order", undefined, PARTITIONS);
  await ensurePartitionGroups(t.redis, t.keys, orderedStream, ORDERED_GROUP);
});

afterEach(async () => {
  for (const host of hosts.splice(0)) await host.stop();
  for (const child of children.splice(0)) await child.kill("SIGKILL");
  await t.cleanup();
});

function env(consumerName: string): Record<string, string> {
  return {
    REDIS_URL: t.url,
    KEY_PREFIX: t.keys.prefix,
    STREAM_PARTITIONS: String(PARTITIONS),
    STREAM_LEASE_TTL_MS: String(LEASE_TTL_MS),
    STREAM_BLOCK_MS: "100",
    PORT: "0",
    LOG_LEVEL: "silent",
    CONSUMER_NAME: consumerName,
  };
}

async function add(deviceId: string, seqs: number[]): Promise<void> {
  for (const seq of seqs) await appendToStream(t.redis, t.keys, orderedStream, { deviceId, seq });
}

const handled = async (deviceId: string) =>
  (await t.redis.lrange(handledKey(t.keys.prefix, deviceId), 0, -1)).map(Number);

/** The partitions' lease holders (one entry per held partition). */
async function leaseHolders(): Promise<string[]> {
  const holders = await Promise.all(
    Array.from({ length: PARTITIONS }, (_, partition) =>
      t.redis.get(`${t.keys.stream(orderedStream.name, partition)}:lease:${ORDERED_GROUP}`),
    ),
  );
  return holders.filter((holder): holder is string => holder !== null);
}

const range = (from: number, to: number) => Array.from({ length: to - from + 1 }, (_, index) => from + index);

describe("a stream read in order by two replicas", () => {
  it("shares the partitions, and handles each device's entries one at a time, in stream order", async () => {
    const inFlight = new Map<number, number>();
    let mostAtOnce = 0;
    const byReplica = new Map<string, number>();
    const replica = (name: string) =>
      inOrderReader({
        handled: async (deviceId) => {
          const partition = partitionOf(deviceId, PARTITIONS);
          const now = (inFlight.get(partition) ?? 0) + 1;
          inFlight.set(partition, now);
          mostAtOnce = Math.max(mostAtOnce, now);
          await new Promise((resolve) => setTimeout(resolve, Math.random() * 3));
          inFlight.set(partition, now - 1);
          byReplica.set(name, (byReplica.get(name) ?? 0) + 1);
        },
      });
    hosts.push(await hostServices("replica-a", [replica("a")], env("replica-a")));
    hosts.push(await hostServices("replica-b", [replica("b")], env("replica-b")));
    await waitFor(leaseHolders, (holders) => holders.length === PARTITIONS && new Set(holders).size === 2, {
      timeoutMs: 15_000,
    });

    const devices = Array.from({ length: 8 }, (_, index) => `device-${index}`);
    await Promise.all(devices.map((deviceId) => add(deviceId, range(1, 25))));
    for (const deviceId of devices)
      expect(
        await waitFor(
          () => handled(deviceId),
          (seqs) => seqs.length >= 25,
          { timeoutMs: 20_000 },
        ),
      ).toEqual(range(1, 25));
    expect(mostAtOnce).toBe(1);
    expect([...byReplica.keys()].sort()).toEqual(["a", "b"]);
  });

  it(
    "a replica SIGKILLed mid-entry has its partitions and the entry it left pending taken over, in order",
    { timeout: 90_000 },
    async () => {
      const dead = new TsProcess("test/fixtures/in-order-reader-child.ts", {
        ...env("replica-dead"),
        LOG_LEVEL: "info",
        HANG_AT: "device-x:3",
      });
      children.push(dead);
      await dead.waitForOutput("services started", 60_000);
      await waitFor(leaseHolders, (holders) => holders.length === PARTITIONS, { timeoutMs: 15_000 });
      await add("device-x", range(1, 10));
      expect(
        await waitFor(
          () => handled("device-x"),
          (seqs) => seqs.length >= 2,
        ),
      ).toEqual([1, 2]);
      await dead.kill("SIGKILL");

      hosts.push(await hostServices("survivor", [inOrderReader()], env("survivor")));
      // At least once: what the dead replica handled but had not acked yet (a read's entries are acked together)
      // is handled again. The survivor starts at the oldest unacked entry, 3 at the latest, and goes on in order:
      // nothing is skipped, nothing handled out of order.
      const seqs = await waitFor(
        () => handled("device-x"),
        (list) => list.at(-1) === 10,
        { timeoutMs: 20_000 },
      );
      const [firstTakenOver = 0, ...survivorRest] = seqs.slice(2);
      expect(firstTakenOver).toBeGreaterThanOrEqual(1);
      expect(firstTakenOver).toBeLessThanOrEqual(3);
      expect([firstTakenOver, ...survivorRest]).toEqual(range(firstTakenOver, 10));
      const partitionKey = t.keys.stream(orderedStream.name, partitionOf("device-x", PARTITIONS));
      const [group] = await consumerGroupsOf(t.redis, partitionKey);
      expect(group?.pending).toBe(0);
    },
  );
});
