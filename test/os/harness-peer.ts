import type { IncomingMessage } from "node:http";
import type { AddressInfo } from "node:net";
import { WebSocketServer, type WebSocket } from "ws";
import { verifyToken } from "../../libs/auth/tokens.js";
import {
  harnessRequestSchema,
  TURN_CORRELATION_V2,
  type HarnessErrorCode,
  type HarnessRequest,
} from "../../libs/contract/harness-wire.js";
import type { Receipt } from "../../libs/contract/receipt.js";
import { waitFor } from "../helpers/test-redis.js";

export interface ReceivedFrame {
  deviceId: string;
  frame: HarnessRequest;
}

/** The device each upgrade request authenticated as (set by verifyClient, read on connection). */
const authenticated = new WeakMap<IncomingMessage, string>();

const LIMITS = {
  receiptCapacity: 1000,
  receiptRetentionSeconds: 86_400,
  eventCapacity: 1000,
  eventRetentionSeconds: 86_400,
  resultRetentionSeconds: 86_400,
  maxPromptBytes: 16_384,
  maxGroupMembers: 64,
  maxResultPayloadBytes: 32_768,
  rateLimitBurst: 100,
  rateLimitPerSecond: 100,
  maxInFlight: 100,
};

/**
 * A scripted Harness speaking the Harness wire (docs/wire-protocol.md) over a real `ws` server: it authenticates the device by JWT, answers
 * hello / turn.send / turn.stop / receipt.get from its own receipt table (a repeated key answers `duplicate`),
 * records every frame it receives, and lets a test push any frame (events, resync) to a device's session.
 */
export class ScriptedHarnessPeer {
  readonly received: ReceivedFrame[] = [];
  readonly receipts = new Map<string, Receipt>();
  /** Top-level transport instance (`hello_result.serverInstanceId`, resync). */
  transportInstanceId = "transport-instance";
  /** Instance stamped on receipts this peer mints. */
  originatingInstanceId = "originating-instance";
  /** How many of the next turn.send answers are "lost" (never sent). */
  dropSendAnswers = 0;
  /** When set, every turn.send is refused with this code (nothing reserved, no receipt). */
  refuseSends: HarnessErrorCode | undefined;
  private readonly sessions = new Map<string, WebSocket>();

  private constructor(private readonly server: WebSocketServer) {
    server.on("connection", (socket, request) => {
      const deviceId = authenticated.get(request) ?? "";
      this.sessions.set(deviceId, socket);
      socket.on("message", (data) => this.answer(deviceId, socket, data.toString()));
      socket.on("error", () => socket.terminate());
      socket.on("close", () => {
        if (this.sessions.get(deviceId) === socket) this.sessions.delete(deviceId);
      });
    });
  }

  static async start(secret: string): Promise<ScriptedHarnessPeer> {
    const server = new WebSocketServer({
      host: "127.0.0.1",
      port: 0,
      path: "/v1/harness/ws",
      verifyClient: (info, done) => {
        const token = /^Bearer\s+(\S+)$/i.exec(info.req.headers.authorization ?? "")?.[1] ?? "";
        verifyToken(secret, token, "harness").then(
          (principal) => {
            if (principal.role !== "os") return done(false, 401);
            authenticated.set(info.req, principal.deviceId);
            done(true);
          },
          () => done(false, 401),
        );
      },
    });
    await new Promise<void>((resolve) => server.once("listening", () => resolve()));
    return new ScriptedHarnessPeer(server);
  }

  get url(): string {
    const { port } = this.server.address() as AddressInfo;
    return `ws://127.0.0.1:${port}/v1/harness/ws`;
  }

  connected(deviceId: string): boolean {
    return this.sessions.has(deviceId);
  }

  /** Waits until the router opened the device's session; fails loudly instead of letting a later push throw. */
  async untilConnected(deviceId: string, timeoutMs = 30_000): Promise<void> {
    if (!(await waitFor(() => this.connected(deviceId), Boolean, { timeoutMs })))
      throw new Error(`the router opened no harness session for ${deviceId} within ${timeoutMs} ms`);
  }

  framesOf(deviceId: string, type: HarnessRequest["type"]): HarnessRequest[] {
    return this.received.filter((r) => r.deviceId === deviceId && r.frame.type === type).map((r) => r.frame);
  }

  /** Pushes a frame to the device's current session (throws when the router has none open). */
  push(deviceId: string, frame: unknown): void {
    const socket = this.sessions.get(deviceId);
    if (!socket) throw new Error(`no harness session for ${deviceId}`);
    socket.send(JSON.stringify(frame));
  }

  /** Makes the peer know a receipt (as if the input had been reserved earlier). */
  remember(deviceId: string, receipt: Receipt): void {
    this.receipts.set(`${deviceId}|${receipt.idempotencyKey}`, receipt);
  }

  dropSessions(): void {
    for (const socket of this.sessions.values()) socket.terminate();
  }

  async close(): Promise<void> {
    this.dropSessions();
    await new Promise<void>((resolve) => this.server.close(() => resolve()));
  }

  private answer(deviceId: string, socket: WebSocket, text: string): void {
    const request = harnessRequestSchema.parse(JSON.parse(text));
    this.received.push({ deviceId, frame: request });
    const reply = (body: Record<string, unknown>) =>
      socket.send(JSON.stringify({ requestId: request.requestId, ...body }));
    switch (request.type) {
      case "hello": {
        const resumed = request.resume?.serverInstanceId === this.transportInstanceId;
        return reply({
          type: "hello_result",
          proto: 1,
          machineId: "machine-fixture",
          serverInstanceId: this.transportInstanceId,
          capabilities: request.capabilities.filter((c) => c === TURN_CORRELATION_V2),
          resumed,
          cursor: resumed ? (request.resume?.cursor ?? 0) : 0,
          limits: LIMITS,
        });
      }
      case "receipt.get":
        return reply({
          type: "receipt.get_result",
          receipt: this.receipts.get(`${deviceId}|${request.idempotencyKey}`) ?? null,
        });
      case "turn.send":
      case "turn.stop": {
        if (request.type === "turn.send" && this.refuseSends)
          return reply({
            type: "turn.send_result",
            error: { code: this.refuseSends, message: "refused by the scripted peer" },
          });
        const known = this.receipts.get(`${deviceId}|${request.idempotencyKey}`);
        const receipt = known ?? this.mint(deviceId, request);
        if (request.type === "turn.send" && this.dropSendAnswers > 0) {
          this.dropSendAnswers -= 1;
          return;
        }
        return reply({ type: `${request.type}_result`, status: known ? "duplicate" : "accepted", receipt });
      }
    }
  }

  private mint(
    deviceId: string,
    request: { type: "turn.send" | "turn.stop"; idempotencyKey: string; agentId: string; machineId: string },
  ): Receipt {
    const receipt: Receipt = {
      idempotencyKey: request.idempotencyKey,
      deliveryId: `delivery-${request.idempotencyKey}`,
      operation: request.type,
      state: "queued",
      machineId: request.machineId,
      agentId: request.agentId,
      serverInstanceId: this.originatingInstanceId,
      turnId: null,
      error: null,
      at: Date.now(),
    };
    this.remember(deviceId, receipt);
    return receipt;
  }
}
