import type { AddressInfo } from "node:net";
import { afterEach, describe, expect, it } from "vitest";
import WebSocket, { WebSocketServer } from "ws";
import { waitFor } from "../../test/helpers/test-redis.js";
import { LampFrameQueue } from "./lamp-frame-queue.js";

const MAX_QUEUED = 4;
const FRAMES = 40;

const servers: WebSocketServer[] = [];
afterEach(async () => {
  for (const server of servers.splice(0)) {
    for (const client of server.clients) client.terminate();
    await new Promise((done) => server.close(done));
  }
});

/** A real socket pair: the server side wraps its socket in a LampFrameQueue whose handler waits for `release`. */
async function queuedSocketPair() {
  const server = new WebSocketServer({ port: 0, host: "127.0.0.1" });
  servers.push(server);
  await new Promise((listening) => server.once("listening", listening));
  const handled: string[] = [];
  let release: () => void = () => undefined;
  const released = new Promise<void>((resolve) => (release = resolve));
  const serverSide = new Promise<WebSocket>((resolve) =>
    server.once("connection", (socket) => {
      const queue = new LampFrameQueue(socket, MAX_QUEUED, async (data) => {
        await released;
        handled.push(data.toString());
      });
      socket.on("message", (data) => queue.push(data));
      resolve(socket);
    }),
  );
  const client = new WebSocket(`ws://127.0.0.1:${(server.address() as AddressInfo).port}`);
  await new Promise((open) => client.once("open", open));
  return { client, server: await serverSide, handled, release };
}

describe("LampFrameQueue", () => {
  it("stops reading a socket while more than the bound wait, then handles every frame in arrival order", async () => {
    const { client, server, handled, release } = await queuedSocketPair();
    for (let frame = 0; frame < FRAMES; frame += 1) client.send(String(frame));
    expect(
      await waitFor(
        () => server.isPaused,
        (paused) => paused,
      ),
    ).toBe(true);
    expect(handled).toEqual([]);

    release();
    const all = Array.from({ length: FRAMES }, (_, frame) => String(frame));
    expect(
      await waitFor(
        () => handled.length,
        (count) => count === FRAMES,
      ),
    ).toBe(FRAMES);
    expect(handled).toEqual(all);
    expect(server.isPaused).toBe(false);
  });
});
