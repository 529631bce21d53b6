import type { WebSocket } from "ws";
import {
  TURN_CORRELATION_V2,
  PROTOCOL_VERSION,
  type HarnessLimits,
  type HarnessRequest,
  type HelloRequest,
} from "../../../libs/contract/harness-wire.js";
import { errorMessage } from "../../../libs/errors/error-message.js";
import type { Logger } from "../../../libs/logging/logger.js";
import type { AgentDirectory } from "../agent-directory.js";
import type { GatewayConfig } from "../config.js";
import type { GatewayMetrics } from "../metrics.js";
import type { ReservableRequest, ReservationStore } from "../reservations/reservation-store.js";
import type { DeviceEventLog, LoggedEvent } from "../store/event-log.js";
import type { InstanceIdentity } from "../../../libs/harness-store/instance-identity.js";
import type { StoredResult } from "../../../libs/harness-store/stored-records.js";
import { errorFrame, parseFrame, type ReplyAddress } from "./request-frame.js";
import { renderResultEvent, resultFormFor, type ResultForm } from "./result-wire.js";
import { TokenBucket } from "./token-bucket.js";

export interface SessionDeps {
  config: GatewayConfig;
  limits: HarnessLimits;
  agents: AgentDirectory;
  reservations: ReservationStore;
  eventLog: DeviceEventLog;
  identity: InstanceIdentity;
  metrics: GatewayMetrics;
  log: Logger;
}

export interface SessionPrincipal {
  deviceId: string;
  tokenIssuedAt: number;
}

const PUMP_BATCH = 256;
const PUMP_RETRY_MS = 1_000;
/** Live events are stamped with the transport instance as read at most this long ago (InstanceIdentity.recent). */
const EVENT_INSTANCE_MAX_AGE_MS = 1_000;

/**
 * One authenticated peer connection. Requests run concurrently (bounded by MAX_IN_FLIGHT), and every frame gets
 * exactly one `<op>_result`. Everything sent goes through one ordered outbound chain, so a hello's answer, its
 * replay or resync and the live events after it reach the peer in that order.
 */
export class HarnessSession {
  private capabilities = new Set<string>();
  private helloed = false;
  private streaming = false;
  private sentCursor = 0;
  /** The form each result took on this connection: one result never goes out in two forms. */
  private readonly sentForms = new Map<string, ResultForm>();
  private readonly bucket: TokenBucket;
  private inFlight = 0;
  private outbound: Promise<void> = Promise.resolve();
  private pumpQueued = false;

  constructor(
    private readonly socket: WebSocket,
    readonly principal: SessionPrincipal,
    private readonly deps: SessionDeps,
  ) {
    this.bucket = new TokenBucket(deps.config.RATE_LIMIT_BURST, deps.config.RATE_LIMIT_PER_SECOND);
  }

  get deviceId(): string {
    return this.principal.deviceId;
  }

  receive(data: Buffer | ArrayBuffer | Buffer[]): void {
    const text = Buffer.isBuffer(data)
      ? data.toString("utf8")
      : Buffer.concat(toBuffers(data)).toString("utf8");
    const parsed = parseFrame(text);
    const address = parsed.ok
      ? parsed.address
      : { type: parsed.error.type, requestId: parsed.error.requestId };
    // Every frame spends a token, garbage included, so a flood of junk is throttled like any other.
    if (!this.bucket.take()) return this.refuse(address, "RATE_LIMITED", "request rate exceeded");
    if (!parsed.ok) return this.reply(parsed.error, parsed.error.error.code);
    const { request } = parsed;
    if (this.inFlight >= this.deps.config.MAX_IN_FLIGHT)
      return this.refuse(
        address,
        "BACKPRESSURE",
        `more than ${this.deps.config.MAX_IN_FLIGHT} requests in flight`,
      );
    this.inFlight += 1;
    void this.handle(request, address).finally(() => (this.inFlight -= 1));
  }

  /**
   * New events exist for this device (notification or catch-up). A pump that fails (Redis unreachable) is tried
   * again after PUMP_RETRY_MS: the notice that asked for it will not come again.
   */
  notify(): void {
    if (!this.streaming || this.pumpQueued) return;
    this.pumpQueued = true;
    this.enqueue(async () => {
      this.pumpQueued = false;
      await this.pump().catch((error: unknown) => {
        this.deps.log.warn(
          { deviceId: this.deviceId, err: errorMessage(error) },
          "event pump failed; retrying",
        );
        setTimeout(() => this.notify(), PUMP_RETRY_MS).unref();
      });
    });
  }

  close(code: number, reason: string): void {
    this.socket.close(code, reason);
  }

  private async handle(request: HarnessRequest, address: ReplyAddress): Promise<void> {
    try {
      if (request.type === "hello") {
        this.helloed = true;
        return this.enqueue(() =>
          this.openStream(request).catch((error: unknown) => this.failHello(address, error)),
        );
      }
      if (!this.helloed) return this.refuse(address, "INVALID_REQUEST", `send hello before ${request.type}`);
      if (request.type === "receipt.get") {
        const receipt = await this.deps.reservations.receipt(this.deviceId, request.idempotencyKey);
        return this.reply({ type: address.type, requestId: request.requestId, receipt });
      }
      return await this.reserve(request, address);
    } catch (error) {
      this.deps.log.error({ err: errorMessage(error) }, "request failed");
      this.refuse(address, "INTERNAL", "internal error; the request may be retried with the same key");
    }
  }

  private async reserve(request: ReservableRequest, address: ReplyAddress): Promise<void> {
    const refusal = this.deps.agents.refusal(request.agentId, request.machineId);
    if (refusal)
      return this.refuse(address, refusal, `${request.agentId} on ${request.machineId}: ${refusal}`);
    const instance = await this.deps.identity.current();
    const outcome = await this.deps.reservations.reserve(
      this.deviceId,
      request,
      instance,
      this.principal.tokenIssuedAt,
    );
    this.deps.metrics.reservations.inc({ operation: request.type, status: outcome.status });
    switch (outcome.status) {
      case "conflict":
        return this.refuse(address, "IDEMPOTENCY_CONFLICT", "key already reserved for a different request");
      case "backpressure":
        return this.refuse(address, "BACKPRESSURE", "receipt capacity holds only unresolved reservations");
      case "revoked":
        this.refuse(address, "REVOKED", "device credential revoked");
        return this.enqueue(async () => this.close(4001, "revoked"));
      case "accepted":
        await this.deps.reservations.dispatch(this.deviceId, outcome.dispatch);
    }
    this.reply({
      type: address.type,
      requestId: request.requestId,
      status: outcome.status,
      receipt: outcome.receipt,
    });
  }

  /** hello: replace the capability set, answer, then replay after a valid cursor or resync. */
  private async openStream(hello: HelloRequest): Promise<void> {
    const offered = this.deps.config.TURN_CORRELATION_V2 ? [TURN_CORRELATION_V2] : [];
    this.capabilities = new Set(offered.filter((capability) => hello.capabilities.includes(capability)));
    const instance = await this.deps.identity.current();
    const { head, floor } = await this.deps.eventLog.bounds(this.deviceId);
    const resume = hello.resume;
    const resumable =
      resume !== undefined &&
      resume.serverInstanceId === instance &&
      resume.cursor <= head &&
      resume.cursor >= floor;
    this.streaming = true;
    this.send({
      type: "hello_result",
      requestId: hello.requestId,
      proto: PROTOCOL_VERSION,
      machineId: this.deps.config.HARNESS_MACHINE_ID,
      serverInstanceId: instance,
      capabilities: [...this.capabilities],
      resumed: resumable,
      cursor: head,
      limits: this.deps.limits,
    });
    if (resumable) {
      this.sentCursor = resume.cursor;
    } else {
      const reason = resume && resume.serverInstanceId === instance ? "cursor_too_old" : "instance_changed";
      await this.resync(reason, instance);
    }
    await this.pump();
  }

  private failHello(address: ReplyAddress, error: unknown): void {
    this.deps.log.error({ err: errorMessage(error) }, "hello failed");
    this.deps.metrics.rejected.inc({ op: address.type, code: "INTERNAL" });
    this.send(errorFrame(address, "INTERNAL", "hello failed; send hello again"));
  }

  private async resync(reason: "instance_changed" | "cursor_too_old", instance: string): Promise<void> {
    const { head, resultIds } = await this.deps.eventLog.openResync(this.deviceId);
    this.send({ type: "resync", reason, serverInstanceId: instance, cursor: head });
    this.deps.metrics.eventsSent.inc({ kind: "resync" });
    let eventId = head;
    for (const resultId of resultIds) {
      eventId += 1;
      const stored = await this.deps.eventLog.result(this.deviceId, resultId);
      this.sendResult(resultId, stored, { eventId, serverInstanceId: instance });
    }
    this.sentCursor = eventId;
  }

  /** Sends what the log holds past the cursor; nothing new costs one read (the instance is read only to send). */
  private async pump(): Promise<void> {
    if (this.socket.readyState !== this.socket.OPEN) return;
    let instance: string | undefined;
    for (;;) {
      const events = await this.deps.eventLog.after(this.deviceId, this.sentCursor, PUMP_BATCH);
      if (events.length === 0) return;
      instance ??= await this.deps.identity.recent(EVENT_INSTANCE_MAX_AGE_MS);
      for (const event of events) this.sendEvent(event, instance);
      if (events.length < PUMP_BATCH) return;
    }
  }

  private sendEvent({ eventId, body, result }: LoggedEvent, serverInstanceId: string): void {
    this.sentCursor = Math.max(this.sentCursor, eventId);
    if (body.kind === "result") return this.sendResult(body.resultId, result, { eventId, serverInstanceId });
    const { kind } = body;
    const { agentId, machineId, payload } =
      kind === "receipt.updated"
        ? {
            agentId: body.receipt.agentId,
            machineId: body.receipt.machineId,
            payload: { receipt: body.receipt, idempotencyKey: body.receipt.idempotencyKey },
          }
        : body;
    this.send({ type: "event", eventId, serverInstanceId, machineId, agentId, kind, payload });
    this.deps.metrics.eventsSent.inc({ kind });
  }

  /** A stored result in the form this connection takes (nothing when it was trimmed). */
  private sendResult(
    resultId: string,
    stored: StoredResult | undefined,
    envelope: { eventId: number; serverInstanceId: string },
  ): void {
    if (!stored) return;
    const form = resultFormFor(
      this.capabilities.has(TURN_CORRELATION_V2),
      this.deps.config.LEGACY_SUMMARY_PROFILE,
    );
    const earlier = this.sentForms.get(resultId);
    if (earlier !== undefined && earlier !== form) return;
    const frame = renderResultEvent(form, stored, envelope);
    if (frame === undefined) return;
    this.sentForms.set(resultId, form);
    this.sendRaw(frame);
    this.deps.metrics.eventsSent.inc({ kind: form });
  }

  private refuse(address: ReplyAddress, code: Parameters<typeof errorFrame>[1], message: string): void {
    this.reply(errorFrame(address, code, message), code);
  }

  private reply(frame: { type: string } & Record<string, unknown>, errorCode?: string): void {
    if (errorCode) this.deps.metrics.rejected.inc({ op: frame.type, code: errorCode });
    this.enqueue(async () => this.send(frame));
  }

  private enqueue(step: () => Promise<void>): void {
    this.outbound = this.outbound.then(step).catch((error: unknown) => {
      this.deps.log.error({ err: errorMessage(error) }, "send failed");
    });
  }

  private send(frame: object): void {
    this.sendRaw(JSON.stringify(frame));
  }

  private sendRaw(text: string): void {
    if (this.socket.readyState === this.socket.OPEN) this.socket.send(text);
  }
}

function toBuffers(data: ArrayBuffer | Buffer[]): Buffer[] {
  return Array.isArray(data) ? data : [Buffer.from(data)];
}
