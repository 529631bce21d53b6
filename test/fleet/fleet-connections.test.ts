import { randomUUID } from "node:crypto";
import { Redis } from "ioredis";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { closeFleet, openFleet, type SimulatedLamp } from "../../bench/fleet/fleet-lamps.js";
import { lamplineClients, total } from "../../bench/fleet/redis-clients.js";
import { OsPartitionKeys } from "../../libs/os-store/os-keys.js";
import { Keyspace } from "../../libs/redis/keyspace.js";
import { freePort, RedisServerProcess } from "../../libs/redis/redis-server-process.js";
import { TsProcess } from "../helpers/child-process.js";
import { waitFor } from "../helpers/test-redis.js";
import { ScriptedHarnessPeer } from "../os/harness-peer.js";
import { HARNESS_SECRET, JWT_SECRET, osToken, voiceRequestFrame } from "../os/os-fixture.js";

const PARTITIONS = 4;
const LAMPS = 300;
const keys = new Keyspace("fleet");

let server: RedisServerProcess;
let redis: Redis;
let peer: ScriptedHarnessPeer;
const processes: TsProcess[] = [];

beforeAll(async () => {
  server = await RedisServerProcess.start();
  redis = new Redis(`redis://127.0.0.1:${server.port}`);
  peer = await ScriptedHarnessPeer.start(HARNESS_SECRET);
});

afterAll(async () => {
  for (const child of processes.splice(0)) await child.kill("SIGKILL");
  await peer.close();
  redis.disconnect();
  await server.stop();
});

/** Waits on the machine's pace (child processes start slowly beside a busy suite). */
const settle = <T>(probe: () => Promise<T> | T, accept: (value: T) => boolean) =>
  waitFor(probe, accept, { timeoutMs: 60_000, intervalMs: 100 });

async function start(
  entry: string,
  extra: Record<string, string>,
): Promise<{ child: TsProcess; port: number }> {
  const port = await freePort();
  const child = new TsProcess(entry, {
    REDIS_URL: `redis://127.0.0.1:${server.port}`,
    KEY_PREFIX: keys.prefix,
    PORT: String(port),
    // Warnings kept, so a failed wait can say what the services saw.
    LOG_LEVEL: "warn",
    AUTH_JWT_SECRET: JWT_SECRET,
    HARNESS_JWT_SECRET: HARNESS_SECRET,
    HARNESS_URL: peer.url,
    STREAM_PARTITIONS: String(PARTITIONS),
    ROUTER_LEASE_TTL_MS: "1500",
    ROUTER_IDLE_GRACE_MS: "500",
    ROUTER_DEVICE_SWEEP_MS: "200",
    HARNESS_RECONNECT_MS: "100",
    LAMP_RATE_LIMIT_BURST: "1000",
    ...extra,
  });
  processes.push(child);
  const ready = await settle(
    () =>
      fetch(`http://127.0.0.1:${port}/readyz`).then(
        (answer) => answer.status === 200,
        () => false,
      ),
    Boolean,
  );
  if (!ready) throw new Error(`${entry} not ready\n${child.log.slice(-2000)}`);
  return { child, port };
}

const leaseHolders = () =>
  Promise.all(Array.from({ length: PARTITIONS }, (_, k) => redis.get(new OsPartitionKeys(keys, k).lease)));
const activeDevices = async () =>
  (
    await Promise.all(
      Array.from({ length: PARTITIONS }, (_, k) => redis.smembers(new OsPartitionKeys(keys, k).devices)),
    )
  )
    .flat()
    .sort();
const openSessions = (deviceIds: string[]) => deviceIds.filter((deviceId) => peer.connected(deviceId)).length;
const deviceIdOf = (n: number) => `fleet-lamp-${n}`;

/** Every device's Harness session open; otherwise fails naming the devices without one and the services' warnings. */
async function everySessionOpen(deviceIds: string[]): Promise<void> {
  const open = await settle(
    () => openSessions(deviceIds),
    (count) => count === deviceIds.length,
  );
  if (open === deviceIds.length) return;
  const missing = deviceIds.filter((deviceId) => !peer.connected(deviceId));
  const active = new Set(await activeDevices());
  const warnings = processes.map((child) => `${child.entry}:\n${child.log.slice(-4000)}`).join("\n");
  throw new Error(
    `${open}/${deviceIds.length} sessions open; without one: ${missing
      .map((deviceId) => `${deviceId} (${active.has(deviceId) ? "active" : "not active"})`)
      .join(", ")}\n${warnings}`,
  );
}

/** A voice.request answered with its receipt (the router sent it); returns the idempotency key. */
async function ask(lamp: SimulatedLamp): Promise<string> {
  const requestId = randomUUID();
  lamp.send(voiceRequestFrame(requestId, `question from ${lamp.deviceId}`));
  const answer = await lamp.next(
    (frame) => frame.type === "voice.request_result" && frame.requestId === requestId,
    60_000,
  );
  expect(answer).toMatchObject({ receipt: { state: expect.any(String) } });
  return String(answer.idempotencyKey);
}

function turnSendsByKey(deviceIds: string[]): Map<string, number> {
  const counts = new Map<string, number>();
  for (const deviceId of deviceIds)
    for (const frame of peer.framesOf(deviceId, "turn.send")) {
      const key = String((frame as { idempotencyKey: string }).idempotencyKey);
      counts.set(key, (counts.get(key) ?? 0) + 1);
    }
  return counts;
}

describe("a fleet of Lamps on one stack", { timeout: 180_000 }, () => {
  it("costs no Redis connection per device; two routers share the partitions and the survivor of a kill takes them over, nothing lost or sent twice; disconnected devices are let go and come back", async () => {
    const gateway = await start("services/device-gateway/main.ts", { GATEWAY_INSTANCE_ID: "gateway-fleet" });
    await start("services/router/main.ts", { ROUTER_INSTANCE_ID: "router-1" });
    const router2 = await start("services/router/main.ts", { ROUTER_INSTANCE_ID: "router-2" });
    const url = `ws://127.0.0.1:${gateway.port}/v1/lamp/ws`;
    // Fair shares: two partitions each.
    const shared = await settle(leaseHolders, (holders) =>
      ["router-1", "router-2"].every((owner) => holders.filter((holder) => holder === owner).length === 2),
    );
    expect(shared.filter((holder) => holder === "router-1")).toHaveLength(2);
    const idle = await lamplineClients(redis);
    expect(idle.get("router/wakeups")).toBe(2);

    const deviceIds = Array.from({ length: LAMPS }, (_, n) => deviceIdOf(n));
    const lamps = await openFleet({
      url,
      count: LAMPS,
      concurrency: 50,
      deviceId: deviceIdOf,
      token: (deviceId) => osToken(deviceId),
    });
    await everySessionOpen(deviceIds);
    const connected = await lamplineClients(redis);
    expect(total(connected)).toBe(total(idle));

    const firstAsked = lamps.slice(0, 20);
    const firstKeys = await Promise.all(firstAsked.map((lamp) => ask(lamp)));

    await router2.child.kill("SIGKILL");
    expect(await settle(leaseHolders, (holders) => holders.every((holder) => holder === "router-1"))).toEqual(
      Array.from({ length: PARTITIONS }, () => "router-1"),
    );
    await everySessionOpen(deviceIds);
    const survivor = await settle(
      () => lamplineClients(redis),
      (clients) => clients.get("router/wakeups") === 1,
    );
    expect(total(survivor)).toBeLessThan(total(idle));

    const laterAsked = lamps.slice(20, 40);
    const laterKeys = await Promise.all(laterAsked.map((lamp) => ask(lamp)));
    const sends = turnSendsByKey(deviceIds);
    expect([...sends.keys()].sort()).toEqual([...firstKeys, ...laterKeys].sort());
    expect([...sends.values()].every((count) => count === 1)).toBe(true);

    // Gone: only the 40 devices whose runs are still pending stay active and keep their sessions.
    await closeFleet(lamps);
    const owed = deviceIds.slice(0, 40).sort();
    expect(await settle(activeDevices, (active) => active.length === owed.length)).toEqual(owed);
    expect(
      await settle(
        () => openSessions(deviceIds),
        (open) => open === owed.length,
      ),
    ).toBe(owed.length);
    expect(openSessions(owed)).toBe(owed.length);
    expect(total(await lamplineClients(redis))).toBe(total(survivor));

    // Back: a returning Lamp is active again and gets its session; still no connection per device.
    const returning = await openFleet({
      url,
      count: 50,
      concurrency: 25,
      deviceId: (n) => deviceIdOf(100 + n),
      token: (deviceId) => osToken(deviceId),
    });
    const back = returning.map((lamp) => lamp.deviceId);
    expect(
      await settle(
        () => openSessions(back),
        (open) => open === back.length,
      ),
    ).toBe(back.length);
    expect(await ask(returning[0] as SimulatedLamp)).toEqual(expect.any(String));
    expect(total(await lamplineClients(redis))).toBe(total(survivor));
    await closeFleet(returning);
  });
});
