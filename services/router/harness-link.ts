import { randomUUID } from "node:crypto";
import WebSocket from "ws";
import type { z } from "zod";
import { harnessErrorResultSchema } from "../../libs/contract/harness-wire.js";
import { keepSocketAlive } from "../../libs/http/socket-keepalive.js";
import type { Logger } from "../../libs/logging/logger.js";

export class HarnessTimeout extends Error {
  readonly code = "HARNESS_TIMEOUT";
}

export class HarnessClosed extends Error {
  readonly code = "HARNESS_CLOSED";
}

export type HarnessError = z.infer<typeof harnessErrorResultSchema>["error"];
export type HarnessAnswer<T> = { ok: true; value: T } | { ok: false; error: HarnessError };

interface Waiter {
  resolve: (frame: unknown) => void;
  reject: (error: Error) => void;
  timer: NodeJS.Timeout;
}

/**
 * One authenticated WebSocket to the Harness: requests are matched to their `<op>_result` by requestId with a
 * timeout (a lost answer is a timeout, and the caller retries with the same idempotency key); every other frame
 * (events, resync) goes to `onFrame` in arrival order. The link pings the Harness every `requestTimeoutMs` and
 * terminates the socket after two request timeouts without a pong, so a dead or half-open server ends in `onClose`
 * (and the caller reconnects) within two request timeouts instead of never; an opening handshake left unanswered
 * fails `open()` after one request timeout.
 */
export class HarnessLink {
  private readonly waiters = new Map<string, Waiter>();
  private socket: WebSocket | undefined;

  constructor(
    private readonly options: {
      url: string;
      token: string;
      requestTimeoutMs: number;
      log: Logger;
      onFrame: (frame: Record<string, unknown>) => void;
      onClose: () => void;
    },
  ) {}

  open(): Promise<void> {
    const socket = new WebSocket(this.options.url, {
      headers: { authorization: `Bearer ${this.options.token}` },
      // A server that accepts the connection but never answers the upgrade would hold the session forever.
      handshakeTimeout: this.options.requestTimeoutMs,
    });
    this.socket = socket;
    socket.on("message", (data) => this.receive(data.toString()));
    socket.once("open", () => this.pingUntilClosed(socket));
    // Without a standing listener a late socket error (reset, refused upgrade) would crash the process.
    socket.on("error", (error) => this.options.log.warn({ err: error.message }, "harness socket error"));
    socket.on("close", () => {
      for (const [requestId, waiter] of this.waiters) {
        clearTimeout(waiter.timer);
        waiter.reject(new HarnessClosed(`connection closed before ${requestId} was answered`));
      }
      this.waiters.clear();
      this.options.onClose();
    });
    return new Promise((resolve, reject) => {
      socket.once("open", () => resolve());
      socket.once("error", (error) => reject(error));
      socket.once("unexpected-response", (_request, response) =>
        reject(new Error(`harness refused the connection: HTTP ${response.statusCode}`)),
      );
    });
  }

  get isOpen(): boolean {
    return this.socket?.readyState === WebSocket.OPEN;
  }

  /** Sends `frame` with a fresh requestId and parses its answer with `schema` (or the coded error answer). */
  async request<S extends z.ZodType>(
    frame: Record<string, unknown>,
    schema: S,
  ): Promise<HarnessAnswer<z.infer<S>>> {
    const requestId = randomUUID();
    const answer = await this.exchange({ ...frame, requestId }, requestId);
    const failure = harnessErrorResultSchema.safeParse(answer);
    if (failure.success) return { ok: false, error: failure.data.error };
    return { ok: true, value: schema.parse(answer) };
  }

  close(): void {
    this.socket?.close();
  }

  /** Two request timeouts of observed silence end the link (libs/http/peer-silence.ts: a pause of ours does not). */
  private pingUntilClosed(socket: WebSocket): void {
    const { requestTimeoutMs, log } = this.options;
    keepSocketAlive(
      socket,
      { pingIntervalMs: requestTimeoutMs, pongTimeoutMs: 2 * requestTimeoutMs },
      (silentForMs) => log.warn({ silentForMs }, "harness stopped answering pings"),
    );
  }

  private exchange(frame: Record<string, unknown>, requestId: string): Promise<unknown> {
    const socket = this.socket;
    if (!socket || socket.readyState !== WebSocket.OPEN)
      return Promise.reject(new HarnessClosed("not connected"));
    return new Promise((resolve, reject) => {
      const timer = setTimeout(() => {
        this.waiters.delete(requestId);
        reject(new HarnessTimeout(`${String(frame.type)} ${requestId} not answered in time`));
      }, this.options.requestTimeoutMs);
      this.waiters.set(requestId, { resolve, reject, timer });
      socket.send(JSON.stringify(frame));
    });
  }

  private receive(text: string): void {
    let frame: unknown;
    try {
      frame = JSON.parse(text);
    } catch {
      this.options.log.warn({ length: text.length }, "harness sent a frame that is not JSON");
      return;
    }
    if (frame === null || typeof frame !== "object" || Array.isArray(frame)) return;
    const record = frame as Record<string, unknown>;
    const requestId = typeof record.requestId === "string" ? record.requestId : undefined;
    const waiter = requestId ? this.waiters.get(requestId) : undefined;
    if (requestId && waiter) {
      clearTimeout(waiter.timer);
      this.waiters.delete(requestId);
      waiter.resolve(record);
      return;
    }
    this.options.onFrame(record);
  }
}
