import { STREAM_CATALOG } from "../../libs/contract/catalog.js";
import { afterEach, beforeEach, describe, expect, it } from "vitest";

import { OsDeviceKeys, resultKeyOf } from "../../libs/os-store/os-keys.js";
import { freePort } from "../../libs/redis/redis-server-process.js";
import { TsProcess } from "../helpers/child-process.js";
import { createTestRedis, waitFor, type TestRedis } from "../helpers/test-redis.js";
import { ScriptedHarnessPeer } from "./harness-peer.js";
import {
  HARNESS_SECRET,
  osEnv,
  rejectionsOf,
  resolverIdle,
  resultEvent,
  seedRun,
  statesOf,
  entriesAppended,
} from "./os-fixture.js";

const DEVICE = "lamp-faults";
let t: TestRedis;
let peer: ScriptedHarnessPeer;
let device: OsDeviceKeys;
const processes: TsProcess[] = [];

async function startService(name: "router" | "run-resolver", extra: Record<string, string> = {}) {
  const child = new TsProcess(
    `services/${name}/main.ts`,
    osEnv(t, peer, { PORT: String(await freePort()), LOG_LEVEL: "info", NODE_ENV: "test", ...extra }),
  );
  processes.push(child);
  await child.waitForOutput("services started");
  return child;
}

/** The failpoint makes the process SIGKILL itself; wait for that instead of killing it ourselves. */
async function diedByItself(child: TsProcess): Promise<boolean> {
  const gone = () => {
    try {
      process.kill(child.pid ?? 0, 0);
      return false;
    } catch {
      return true;
    }
  };
  return settle(gone, Boolean);
}

/** Child processes start slowly on a loaded machine; every wait here allows for that. */
function settle<T>(probe: () => Promise<T> | T, accept: (value: T) => boolean): Promise<T> {
  return waitFor(probe, accept, { timeoutMs: 30_000 });
}

const hellos = () => peer.framesOf(DEVICE, "hello");

beforeEach(async () => {
  t = createTestRedis("faults");
  peer = await ScriptedHarnessPeer.start(HARNESS_SECRET);
  device = new OsDeviceKeys(t.keys, DEVICE);
});

afterEach(async () => {
  for (const child of processes.splice(0)) await child.kill("SIGKILL");
  await peer.close();
  await t.cleanup();
});

/** What "nothing happened twice" means for the store: one result, one emit, no errors or rejections. */
async function expectExactlyOnce(runs: Record<string, string>) {
  expect(await statesOf(t, DEVICE, runs)).toEqual(
    Object.fromEntries(Object.keys(runs).map((k) => [k, "resolved"])),
  );
  expect(await t.redis.keys(device.result("*"))).toHaveLength(1);
  expect(await entriesAppended(t, STREAM_CATALOG.osResolved.name)).toBe(1);
  expect(await t.redis.exists(device.protocolErrors)).toBe(0);
  expect(await rejectionsOf(t, DEVICE)).toEqual([]);
}

describe("crash recovery (services as their own processes, SIGKILL)", { timeout: 120_000 }, () => {
  it("router killed after routing but before the cursor moved: the replayed event changes nothing", async () => {
    const runs = {
      A: await seedRun(t, peer, DEVICE, { key: "key-A", deliveryId: "delivery-A" }),
      B: await seedRun(t, peer, DEVICE, { key: "key-B", deliveryId: "delivery-B" }),
    };
    await startService("run-resolver");
    const router = await startService("router", { FAILPOINT: "router.after-stage" });
    await settle(
      () => hellos().length,
      (n) => n === 1,
    );
    const event = resultEvent({
      resultId: "r-ab",
      members: [
        ["delivery-A", "key-A"],
        ["delivery-B", "key-B"],
      ],
    });
    peer.push(DEVICE, event);
    expect(await diedByItself(router)).toBe(true);
    expect(await t.redis.hgetall(device.cursor)).toEqual({});

    await router.restart();
    await settle(
      () => hellos().length,
      (n) => n === 2,
    );
    expect(hellos()[1]).not.toHaveProperty("resume");
    peer.push(DEVICE, event); // the Harness replays everything after the (absent) cursor
    await settle(
      () => t.redis.hget(device.cursor, "cursor"),
      (c) => c === String(event.eventId),
    );
    expect(await settle(() => resolverIdle(t), Boolean)).toBe(true);
    await expectExactlyOnce(runs);
    expect(await entriesAppended(t, STREAM_CATALOG.osRouted.name)).toBe(2);
  });

  it("run-resolver killed between store and emit: after restart it emits once and the state is unchanged", async () => {
    const runs = { A: await seedRun(t, peer, DEVICE, { key: "key-A", deliveryId: "delivery-A" }) };
    const resolver = await startService("run-resolver", {
      FAILPOINT: "run-resolver.after-store",
      CONSUMER_NAME: "resolver-1",
    });
    await startService("router");
    await settle(() => peer.connected(DEVICE), Boolean);
    peer.push(DEVICE, resultEvent({ resultId: "r-a", members: [["delivery-A", "key-A"]] }));
    expect(await diedByItself(resolver)).toBe(true);
    const result = device.result(resultKeyOf("originating-instance", "r-a"));
    expect(await t.redis.hget(result, "emittedAt")).toBeNull();
    expect(await statesOf(t, DEVICE, runs)).toEqual({ A: "resolved" });
    expect(await entriesAppended(t, STREAM_CATALOG.osResolved.name)).toBe(0);

    await resolver.restart();
    await settle(
      () => t.redis.hget(result, "emittedAt"),
      (at) => at !== null,
    );
    expect(await settle(() => resolverIdle(t), Boolean)).toBe(true);
    await expectExactlyOnce(runs);
  });

  it("a result held for its receipt survives a router restart and applies when the receipt binds", async () => {
    await startService("run-resolver");
    const router = await startService("router");
    peer.dropSendAnswers = 1; // the send's answer is lost: the receipt is not bound
    const runs = { C: await seedRun(t, peer, DEVICE, { key: "key-C" }) };
    await settle(
      () => peer.framesOf(DEVICE, "turn.send").length,
      (n) => n === 1,
    );
    peer.push(DEVICE, resultEvent({ resultId: "r-c", members: [["delivery-key-C", "key-C"]] }));
    await settle(
      () => t.redis.hlen(device.waiting),
      (n) => n === 1,
    );
    expect(await statesOf(t, DEVICE, runs)).toEqual({ C: "pending" });

    await router.restart();
    // After restart the router reconciles with receipt.get (and retries the send with the SAME key).
    await settle(
      () => statesOf(t, DEVICE, runs),
      (s) => s.C === "resolved",
    );
    // The router appends the routed result before it drops the held copy, so the run can resolve a moment earlier.
    await settle(
      () => t.redis.hlen(device.waiting),
      (n) => n === 0,
    );
    const keys = peer
      .framesOf(DEVICE, "turn.send")
      .map((frame) => ("idempotencyKey" in frame ? frame.idempotencyKey : ""));
    expect(new Set(keys)).toEqual(new Set(["key-C"]));
    expect(await settle(() => resolverIdle(t), Boolean)).toBe(true);
    await expectExactlyOnce(runs);
  });

  it("lease takeover: the surviving router resumes the device from the persisted cursor, nothing lost or repeated", async () => {
    const runs = {
      A: await seedRun(t, peer, DEVICE, { key: "key-A", deliveryId: "delivery-A" }),
      B: await seedRun(t, peer, DEVICE, { key: "key-B", deliveryId: "delivery-B" }),
    };
    await startService("run-resolver");
    const first = await startService("router", { ROUTER_INSTANCE_ID: "router-1" });
    await settle(
      () => hellos().length,
      (n) => n === 1,
    );
    await startService("router", { ROUTER_INSTANCE_ID: "router-2" });
    expect(await t.redis.get(device.lease)).toBe("router-1");
    const eventA = resultEvent({ resultId: "r-a", members: [["delivery-A", "key-A"]] });
    peer.push(DEVICE, eventA);
    await settle(
      () => statesOf(t, DEVICE, runs),
      (s) => s.A === "resolved",
    );
    await settle(
      () => t.redis.hget(device.cursor, "cursor"),
      (c) => c === String(eventA.eventId),
    );

    await first.kill("SIGKILL");
    await settle(
      () => hellos().length,
      (n) => n === 2,
    );
    expect(await t.redis.get(device.lease)).toBe("router-2");
    expect(hellos()[1]).toMatchObject({
      resume: { serverInstanceId: "transport-instance", cursor: eventA.eventId },
    });
    const eventB = resultEvent({ resultId: "r-b", members: [["delivery-B", "key-B"]] });
    peer.push(DEVICE, eventB);
    await settle(
      () => statesOf(t, DEVICE, runs),
      (s) => s.B === "resolved",
    );
    expect(await settle(() => resolverIdle(t), Boolean)).toBe(true);
    expect(await entriesAppended(t, STREAM_CATALOG.osResolved.name)).toBe(2);
    expect(await entriesAppended(t, STREAM_CATALOG.osRouted.name)).toBe(2);
    expect(await rejectionsOf(t, DEVICE)).toEqual([]);
  });
});
