import { randomUUID } from "node:crypto";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { WebSocket } from "ws";
import { signToken } from "../../libs/auth/tokens.js";
import { STREAM_CATALOG } from "../../libs/contract/catalog.js";
import { RedisServerProcess } from "../../libs/redis/redis-server-process.js";
import { hostServices, type HostedServices } from "../../libs/service/service-host.js";
import { deviceGatewayService } from "../../services/device-gateway/definition.js";
import { ttsDispatcherService } from "../../services/tts-dispatcher/definition.js";
import { entriesAdded } from "../helpers/stream-progress.js";
import { createTestRedis, waitFor, type TestRedis } from "../helpers/test-redis.js";
import { ttsTestEnv } from "../tts/tts-service.js";
import { consumerGroupsOf } from "../../libs/streams/group-info.js";

/**
 * Issue 16 item 2: junk traffic does not grow Redis. 10,000 `playback.ack` frames for playback ids nobody issued go
 * through the real device-gateway and tts-dispatcher (the ack is forwarded on `os.lamp_events`, the dispatcher finds
 * no playback and writes nothing); once consumed, the stream trim removes the entries. A private redis-server, so
 * key count and used_memory are this test's alone.
 */
const SECRET = "junk-ack-secret-0123456789abcdef-0123";
const ACKS = 10_000;
let server: RedisServerProcess;
let t: TestRedis;
let services: HostedServices;

beforeAll(async () => {
  server = await RedisServerProcess.start({ appendonly: false });
  t = createTestRedis("junk-acks", server.url);
  services = await hostServices(
    "junk-acks",
    [deviceGatewayService, ttsDispatcherService],
    ttsTestEnv(t, {
      AUTH_JWT_SECRET: SECRET,
      GATEWAY_INSTANCE_ID: "gw-junk",
      STREAM_TRIM_INTERVAL_MS: "200",
    }),
  );
}, 60_000);

afterAll(async () => {
  await services?.stop();
  await t?.connections.close();
  await server?.stop();
});

async function usedMemory(): Promise<number> {
  return Number(/^used_memory:(\d+)/m.exec(await t.redis.info("memory"))?.[1]);
}

/** Consumed by the dispatcher's ack group: nothing pending, nothing undelivered. */
async function acksConsumed(): Promise<boolean> {
  const groups = await consumerGroupsOf(t.redis, t.keys.stream(STREAM_CATALOG.lampEvents.name));
  return groups.every((info) => info.pending === 0 && info.lag === 0);
}

describe("10,000 playback.ack frames for unknown playback ids", () => {
  it("leave the key count where it was and used_memory within a small bound once consumed", async () => {
    const token = await signToken(SECRET, { audience: "os", sub: "lamp-junk", role: "device" });
    const socket = new WebSocket(`${services.url.replace(/^http/, "ws")}/v1/lamp/ws`, {
      headers: { authorization: `Bearer ${token}` },
    });
    await new Promise((resolve, reject) => socket.once("open", resolve).once("error", reject));
    // One ack first so every key the path creates once (stream, group, presence) exists before the baseline.
    socket.send(JSON.stringify({ type: "playback.ack", playbackId: randomUUID(), state: "started" }));
    const stream = t.keys.stream(STREAM_CATALOG.lampEvents.name);
    await waitFor(acksConsumed, (done) => done, { timeoutMs: 30_000 });
    await waitFor(
      () => t.redis.xlen(stream),
      (length) => length === 0,
      { timeoutMs: 30_000 },
    );
    const keysBefore = await t.redis.dbsize();
    const memoryBefore = await usedMemory();
    const addedBefore = await entriesAdded(t.redis, stream);

    for (let n = 0; n < ACKS; n += 1)
      socket.send(JSON.stringify({ type: "playback.ack", playbackId: randomUUID(), state: "finished" }));
    const written = await waitFor(
      async () => (await entriesAdded(t.redis, stream)) - addedBefore,
      (added) => added >= ACKS,
      { timeoutMs: 120_000 },
    );
    expect(written).toBe(ACKS);
    await waitFor(acksConsumed, (done) => done, { timeoutMs: 120_000 });
    const length = await waitFor(
      () => t.redis.xlen(stream),
      (count) => count < 100,
      { timeoutMs: 30_000 },
    );
    socket.close();

    expect(length).toBeLessThan(100);
    expect(await t.redis.dbsize()).toBeLessThanOrEqual(keysBefore);
    // A stream node of slack and allocator noise; 10,000 retained acks would be well over a megabyte.
    expect((await usedMemory()) - memoryBefore).toBeLessThan(256 * 1024);
  }, 240_000);
});
