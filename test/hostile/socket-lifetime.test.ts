import { connect as connectTcp, createServer as createTcpServer, type Socket } from "node:net";
import { randomBytes } from "node:crypto";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import WebSocket, { WebSocketServer } from "ws";
import { signToken } from "../../libs/auth/tokens.js";
import { OsDeviceKeys } from "../../libs/os-store/os-keys.js";
import { TOKEN_EXPIRED_CLOSE_CODE } from "../../libs/http/token-expiry.js";
import { hostServices, type HostedServices } from "../../libs/service/service-host.js";
import { deviceGatewayService } from "../../services/device-gateway/definition.js";
import { HarnessLink } from "../../services/router/harness-link.js";
import { HARNESS_SECRET, startHarness, tokenFor, wsUrl } from "../harness/harness-fixture.js";
import { createTestRedis, testLog, waitFor, type TestRedis } from "../helpers/test-redis.js";
import { lampUrl } from "./lamp-world.js";
import { sampleValue } from "../helpers/metrics-text.js";

const LAMP_SECRET = "socket-lifetime-secret-0123456789abcdef";
/** Short keepalive: a silent peer is dropped within PING + PONG_TIMEOUT (plus a tick of slack). */
const PING_MS = 100;
const PONG_TIMEOUT_MS = 300;
const KEEPALIVE = { WS_PING_INTERVAL_MS: String(PING_MS), WS_PONG_TIMEOUT_MS: String(PONG_TIMEOUT_MS) };
const DROP_BOUND_MS = PING_MS * 2 + PONG_TIMEOUT_MS + 500;

const lampToken = (deviceId: string, expiresInSeconds?: number) =>
  signToken(LAMP_SECRET, {
    audience: "os",
    sub: deviceId,
    role: "device",
    ...(expiresInSeconds ? { expiresInSeconds } : {}),
  });

function open(url: string, token: string, options: { autoPong?: boolean } = {}): Promise<WebSocket> {
  const socket = new WebSocket(url, { headers: { authorization: `Bearer ${token}` }, ...options });
  socket.on("error", () => undefined);
  return new Promise((resolve, reject) => {
    socket.once("open", () => resolve(socket));
    socket.once("unexpected-response", (_request, response) =>
      reject(new Error(`upgrade refused: ${response.statusCode}`)),
    );
  });
}

const closed = (socket: WebSocket) =>
  new Promise<{ code: number; reason: string; at: number }>((resolve) =>
    socket.once("close", (code, reason) => resolve({ code, reason: reason.toString(), at: Date.now() })),
  );

/**
 * A peer that completes the WebSocket upgrade and then goes silent: it never reads again, so it never answers a
 * ping (a half-open peer as the server sees it).
 */
function halfOpenPeer(url: string, path: string, token: string): Promise<Socket> {
  const { hostname, port } = new URL(url);
  const socket = connectTcp({ host: hostname, port: Number(port) });
  socket.on("error", () => undefined);
  return new Promise((resolve, reject) => {
    socket.once("connect", () =>
      socket.write(
        `GET ${path} HTTP/1.1\r\nHost: ${hostname}:${port}\r\nUpgrade: websocket\r\nConnection: Upgrade\r\n` +
          `Sec-WebSocket-Key: ${randomBytes(16).toString("base64")}\r\nSec-WebSocket-Version: 13\r\n` +
          `Authorization: Bearer ${token}\r\n\r\n`,
      ),
    );
    socket.once("data", (chunk: Buffer) => {
      if (!chunk.toString("latin1").startsWith("HTTP/1.1 101")) return reject(new Error("upgrade refused"));
      socket.pause();
      resolve(socket);
    });
  });
}

async function gauge(baseUrl: string, name: string): Promise<number> {
  const text = await (await fetch(`${baseUrl}/metrics`)).text();
  return sampleValue(text, name) ?? Number.NaN;
}

describe("Lamp sockets: token expiry and keepalive", () => {
  let t: TestRedis;
  let services: HostedServices;
  beforeAll(async () => {
    t = createTestRedis("lifetime-lamp");
    services = await hostServices("test", [deviceGatewayService], {
      REDIS_URL: t.url,
      KEY_PREFIX: t.keys.prefix,
      STREAM_PARTITIONS: String(t.keys.partitions),
      PORT: "0",
      LOG_LEVEL: "silent",
      AUTH_JWT_SECRET: LAMP_SECRET,
      ...KEEPALIVE,
    });
  });
  afterAll(async () => {
    await services.stop();
    await t.cleanup();
  });

  it("closes a socket with 4002 'token expired' when its token's exp passes", async () => {
    const token = await lampToken("lamp-expiring", 2);
    const socket = await open(lampUrl(services.url), token);
    const { code, reason, at } = await closed(socket);
    expect({ code, reason }).toEqual({ code: TOKEN_EXPIRED_CLOSE_CODE, reason: "token expired" });
    const expiresAtMs = JSON.parse(Buffer.from(token.split(".")[1]!, "base64url").toString()).exp * 1000;
    expect(at).toBeGreaterThanOrEqual(expiresAtMs);
    expect(at - expiresAtMs).toBeLessThan(1_000);
  });

  it("terminates a peer that stops answering pings within ping + pong timeout, releases its presence and keeps a live peer", async () => {
    const live = await open(lampUrl(services.url), await lampToken("lamp-live"));
    const opened = Date.now();
    const silent = await open(lampUrl(services.url), await lampToken("lamp-silent"), { autoPong: false });
    const presence = new OsDeviceKeys(t.keys, "lamp-silent").lampPresence;
    expect(
      await waitFor(
        () => t.redis.exists(presence),
        (exists) => exists === 1,
      ),
    ).toBe(1);

    const { code, at } = await closed(silent);
    expect(code).toBe(1006);
    expect(at - opened).toBeGreaterThanOrEqual(PONG_TIMEOUT_MS);
    expect(at - opened).toBeLessThan(DROP_BOUND_MS);
    expect(
      await waitFor(
        () => t.redis.exists(presence),
        (exists) => exists === 0,
      ),
    ).toBe(0);
    expect(
      await waitFor(
        () => gauge(services.url, "os_lamp_sockets"),
        (open) => open === 1,
      ),
    ).toBe(1);
    expect(live.readyState).toBe(WebSocket.OPEN);
    expect(await t.redis.exists(new OsDeviceKeys(t.keys, "lamp-live").lampPresence)).toBe(1);
    live.close();
  });

  it("drops a half-open TCP peer that completed the upgrade and reads nothing more", async () => {
    const peer = await halfOpenPeer(services.url, "/v1/lamp/ws", await lampToken("lamp-half-open"));
    const presence = new OsDeviceKeys(t.keys, "lamp-half-open").lampPresence;
    expect(
      await waitFor(
        () => t.redis.exists(presence),
        (exists) => exists === 1,
      ),
    ).toBe(1);
    expect(
      await waitFor(
        () => t.redis.exists(presence),
        (exists) => exists === 0,
        { timeoutMs: DROP_BOUND_MS },
      ),
    ).toBe(0);
    peer.destroy();
  });
});

describe("Harness sessions: token expiry and keepalive", () => {
  let t: TestRedis;
  let harness: HostedServices;
  beforeAll(async () => {
    t = createTestRedis("lifetime-harness");
    harness = await startHarness(t, KEEPALIVE);
  });
  afterAll(async () => {
    await harness.stop();
    await t.cleanup();
  });

  it("closes a session with 4002 'token expired' when its token's exp passes", async () => {
    const token = await signToken(HARNESS_SECRET, {
      audience: "harness",
      sub: "peer-expiring",
      role: "os",
      expiresInSeconds: 2,
    });
    const socket = await open(wsUrl(harness.url), token);
    expect(await closed(socket)).toMatchObject({ code: TOKEN_EXPIRED_CLOSE_CODE, reason: "token expired" });
  });

  it("drops a half-open peer within ping + pong timeout and unregisters its session", async () => {
    const live = await open(wsUrl(harness.url), await tokenFor("peer-live"));
    await halfOpenPeer(harness.url, "/v1/harness/ws", await tokenFor("peer-half-open"));
    expect(
      await waitFor(
        () => gauge(harness.url, "harness_gateway_sessions"),
        (open) => open === 2,
      ),
    ).toBe(2);
    const sessions = await waitFor(
      () => gauge(harness.url, "harness_gateway_sessions"),
      (open) => open === 1,
      { timeoutMs: DROP_BOUND_MS },
    );
    expect(sessions).toBe(1);
    expect(live.readyState).toBe(WebSocket.OPEN);
    live.close();
  });
});

describe("the router's Harness link", () => {
  /** A link to a loopback server on `port`; only its timing and its close matter here. */
  const linkTo = (port: number, requestTimeoutMs: number, onClose: () => void = () => undefined) =>
    new HarnessLink({
      url: `ws://127.0.0.1:${port}`,
      token: "unused",
      requestTimeoutMs,
      log: testLog,
      onFrame: () => undefined,
      onClose,
    });

  it("fails to open within one request timeout when the server accepts the connection but never answers the upgrade", async () => {
    const accepted: Socket[] = [];
    const server = createTcpServer((socket) => accepted.push(socket));
    await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
    const { port } = server.address() as { port: number };
    const link = linkTo(port, 300);
    const started = Date.now();
    await expect(link.open()).rejects.toThrow(/handshake has timed out/);
    expect(Date.now() - started).toBeLessThan(300 + 1_000);
    expect(accepted).toHaveLength(1);
    for (const socket of accepted) socket.destroy();
    await new Promise((resolve) => server.close(resolve));
  });

  it("terminates a link whose server stops answering pings, so the session reconnects", async () => {
    const server = new WebSocketServer({ port: 0, host: "127.0.0.1", autoPong: false });
    await new Promise((resolve) => server.once("listening", resolve));
    const { port } = server.address() as { port: number };
    let closedAt: number | undefined;
    const link = linkTo(port, 200, () => (closedAt = Date.now()));
    const opened = Date.now();
    await link.open();
    const at = await waitFor(
      () => closedAt,
      (value) => value !== undefined,
    );
    expect(at).toBeDefined();
    expect((at ?? Infinity) - opened).toBeLessThan(200 * 2 + 500);
    await new Promise((resolve) => server.close(resolve));
  });
});
