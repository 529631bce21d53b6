import { STREAM_CATALOG } from "../../libs/contract/catalog.js";
import type { RedisClient } from "../../libs/redis/redis-client.js";
import type { WebSocket } from "ws";
import type { Counter } from "prom-client";
import { z } from "zod";

import { MAX_PROMPT_BYTES } from "../../libs/contract/harness-wire.js";
import { utf8Bytes } from "../../libs/contract/identifiers.js";
import {
  lampRequestSchema,
  type LampErrorCode,
  type LampRequest,
  type PlaybackRepeat,
  type VoiceRequest,
} from "../../libs/contract/lamp-wire.js";
import type { Receipt } from "../../libs/contract/receipt.js";
import { parseRunRecord, runReceipt } from "../../libs/os-store/run-record.js";
import type { Logger } from "../../libs/logging/logger.js";
import type { SendReply } from "../../libs/contract/device-commands.js";
import { OsDeviceKeys } from "../../libs/os-store/os-keys.js";
import type { Keyspace } from "../../libs/redis/keyspace.js";
import { errorMessage } from "../../libs/errors/error-message.js";
import { appendToStream } from "../../libs/streams/stream-writer.js";
import type { ReceiptWaiters } from "./receipt-waiters.js";
import { admitRepeat } from "./repeat-admission.js";
import { repeatRefusal } from "./repeat-rules.js";
import type { RunRegistration } from "./run-registration.js";
import type { RunUpdateFeed } from "./run-update-feed.js";

type Answer = Record<string, unknown>;

/** Enough of an invalid frame to address the error answer to it; never throws, whatever the JSON is. */
const frameLabels = z
  .unknown()
  .transform((value) => (typeof value === "object" && value !== null && !Array.isArray(value) ? value : {}))
  .pipe(z.looseObject({ type: z.unknown().optional(), requestId: z.unknown().optional() }));

const HARNESS_TO_LAMP_CODE: Record<string, LampErrorCode> = {
  PAYLOAD_TOO_LARGE: "PAYLOAD_TOO_LARGE",
  RATE_LIMITED: "RATE_LIMITED",
  BACKPRESSURE: "UNAVAILABLE",
  REVOKED: "UNAUTHORIZED",
  UNAUTHORIZED: "UNAUTHORIZED",
};

/** A voice.request's text over 16 KiB is PAYLOAD_TOO_LARGE, as at the Harness; every other schema issue INVALID_REQUEST. */
const oversizedText = z.looseObject({
  type: z.literal("voice.request"),
  text: z.string().refine((text) => utf8Bytes(text) > MAX_PROMPT_BYTES),
});

/** The frame's JSON value, or undefined when it is not JSON (no JSON text parses to undefined). */
function parseJson(text: string): unknown {
  try {
    return JSON.parse(text);
  } catch {
    return undefined;
  }
}

const errorAnswer = (type: string, requestId: string | null, code: LampErrorCode, message: string) => ({
  type: `${type}_result`,
  requestId,
  error: { code, message },
});

/**
 * What one authenticated Lamp says, answered frame by frame. The device identity is the socket's credential,
 * never a field of the frame. Bad input gets a coded error and changes nothing.
 */
export class LampFrames {
  constructor(
    private readonly deps: {
      redis: RedisClient;
      keys: Keyspace;
      registration: RunRegistration;
      waiters: ReceiptWaiters;
      updates: RunUpdateFeed;
      receiptWaitMs: number;
      /** Repeats a device may have waiting to be spoken; one more is TOO_MANY_REPEATS. */
      maxQueuedRepeats: number;
      log: Logger;
      frames: Counter;
    },
  ) {}

  /** Returns the answer to send back, if the frame has one (a replay's answer is sent by the update feed). */
  async handle(deviceId: string, socket: WebSocket, text: string): Promise<Answer | undefined> {
    const json = parseJson(text);
    if (json === undefined)
      return this.count("unparsed", errorAnswer("error", null, "INVALID_REQUEST", "frame is not JSON"));
    const parsed = lampRequestSchema.safeParse(json);
    if (!parsed.success) {
      const { type, requestId } = frameLabels.parse(json);
      const issue = parsed.error.issues[0];
      const tooLarge = oversizedText.safeParse(json).success;
      return this.count(
        "invalid",
        errorAnswer(
          typeof type === "string" && /^[a-z.]{1,40}$/.test(type) ? type : "error",
          typeof requestId === "string" ? requestId : null,
          tooLarge ? "PAYLOAD_TOO_LARGE" : "INVALID_REQUEST",
          tooLarge
            ? `text exceeds ${MAX_PROMPT_BYTES} bytes of UTF-8`
            : `${issue?.path.join(".") || "(root)"}: ${issue?.message ?? "invalid"}`,
        ),
      );
    }
    try {
      return this.count(parsed.data.type, await this.dispatch(deviceId, socket, parsed.data));
    } catch (error) {
      this.deps.log.error(
        { deviceId, type: parsed.data.type, err: errorMessage(error) },
        "lamp frame failed",
      );
      const requestId = "requestId" in parsed.data ? parsed.data.requestId : null;
      return this.count(
        parsed.data.type,
        errorAnswer(parsed.data.type, requestId, "UNAVAILABLE", "store unavailable; nothing was done"),
      );
    }
  }

  /**
   * A frame still queued when its socket closed: nobody is left to answer a request, so it is dropped and starts
   * nothing (no run, no command); an ack starts nothing either and is still forwarded, so a playback the Lamp
   * finished just before leaving is not left uncertain.
   */
  async handleAfterClose(deviceId: string, text: string): Promise<void> {
    const parsed = lampRequestSchema.safeParse(parseJson(text));
    if (parsed.success && parsed.data.type === "playback.ack") {
      this.count("playback.ack", await this.forwardAck(deviceId, parsed.data.playbackId, parsed.data.state));
      return;
    }
    this.deps.frames.inc({ type: parsed.success ? parsed.data.type : "invalid", result: "dropped_closed" });
  }

  private async dispatch(
    deviceId: string,
    socket: WebSocket,
    request: LampRequest,
  ): Promise<Answer | undefined> {
    switch (request.type) {
      case "run.updates_since":
        this.deps.updates.resume(deviceId, socket, request.requestId, request.after);
        return undefined;
      case "voice.request":
        return this.voiceRequest(deviceId, request);
      case "voice.cancel":
        return this.voiceCancel(deviceId, request.requestId, request.runId);
      case "playback.ack":
        return this.forwardAck(deviceId, request.playbackId, request.state);
      case "playback.repeat":
        return this.repeat(deviceId, request);
    }
  }

  private async voiceRequest(deviceId: string, request: VoiceRequest): Promise<Answer> {
    // A new run's receipt is awaited from before its send is queued, so no reply can come first: it needs no read
    // of a receipt already bound. A repeated request's run may have one (receiptOf).
    const runId = this.deps.registration.newRunId();
    const newRunWaiter = this.deps.waiters.wait(runId, this.deps.receiptWaitMs);
    const registered = await this.deps.registration
      .register(deviceId, request, runId)
      .catch((error: unknown) => {
        newRunWaiter.cancel();
        throw error;
      });
    if (registered.status !== "created") newRunWaiter.cancel();
    if (registered.status === "conflict")
      return errorAnswer(
        request.type,
        request.requestId,
        "INVALID_REQUEST",
        "requestId was already used for a different request",
      );
    if (registered.status === "key_taken")
      return errorAnswer(
        request.type,
        request.requestId,
        "IDEMPOTENCY_KEY_IN_USE",
        `idempotency key ${registered.idempotencyKey} is already used by another run; nothing was registered, retry`,
      );
    if (registered.status === "too_many_pending")
      return errorAnswer(
        request.type,
        request.requestId,
        "TOO_MANY_PENDING_RUNS",
        `the device has ${registered.maxPendingRuns} unresolved runs; nothing was registered, retry when one ends`,
      );
    if (registered.status === "rate_limited")
      return errorAnswer(
        request.type,
        request.requestId,
        "RATE_LIMITED",
        `voice.request rate exceeded; nothing was registered, retry in ${registered.retryAfterMs} ms`,
      );
    const reply =
      registered.status === "created"
        ? await newRunWaiter.reply
        : await this.receiptOf(deviceId, registered.runId);
    if (reply?.error)
      return errorAnswer(
        request.type,
        request.requestId,
        HARNESS_TO_LAMP_CODE[reply.error.code] ?? "INVALID_REQUEST",
        `harness refused the input: ${reply.error.code} ${reply.error.message}`,
      );
    return {
      type: "voice.request_result",
      requestId: request.requestId,
      runId: registered.runId,
      idempotencyKey: registered.idempotencyKey,
      receipt: reply?.receipt ?? null,
    };
  }

  /** The router's reply, or the receipt already bound to the run; undefined when neither comes in time. */
  private async receiptOf(deviceId: string, runId: string): Promise<SendReply | undefined> {
    const waiter = this.deps.waiters.wait(runId, this.deps.receiptWaitMs);
    const stored = await this.storedReceipt(deviceId, runId);
    if (stored) {
      waiter.cancel();
      return { deviceId, runId, receipt: stored };
    }
    return waiter.reply;
  }

  private async storedReceipt(deviceId: string, runId: string): Promise<Receipt | undefined> {
    const run = parseRunRecord(
      await this.deps.redis.hgetall(new OsDeviceKeys(this.deps.keys, deviceId).run(runId)),
    );
    return run && runReceipt(run);
  }

  private async voiceCancel(deviceId: string, requestId: string, runId: string): Promise<Answer> {
    const outcome = await this.deps.registration.cancel(deviceId, runId);
    if (outcome === "not_found") return errorAnswer("voice.cancel", requestId, "NOT_FOUND", "no such run");
    return { type: "voice.cancel_result", requestId, runId, cancelled: true };
  }

  private async forwardAck(
    deviceId: string,
    playbackId: string,
    state: "started" | "finished" | "interrupted" | "rejected",
  ): Promise<undefined> {
    await appendToStream(this.deps.redis, this.deps.keys, STREAM_CATALOG.lampEvents, {
      kind: "playback.ack",
      deviceId,
      playbackId,
      state,
      at: Date.now(),
    });
    return undefined;
  }

  private async repeat(deviceId: string, request: PlaybackRepeat): Promise<Answer> {
    const { requestId, resultId } = request;
    const device = new OsDeviceKeys(this.deps.keys, deviceId);
    const refusal = await repeatRefusal(this.deps.redis, device, resultId);
    if (refusal) return errorAnswer(request.type, requestId, refusal.code, refusal.message);
    const admission = await admitRepeat(this.deps.redis, device, requestId, this.deps.maxQueuedRepeats);
    if (admission.verdict === "refused")
      return errorAnswer(
        request.type,
        requestId,
        "TOO_MANY_REPEATS",
        `the device already has ${admission.queued} repeats waiting to be spoken; retry once one has started`,
      );
    const { playbackId } = admission;
    await appendToStream(this.deps.redis, this.deps.keys, STREAM_CATALOG.lampEvents, {
      kind: "playback.repeat",
      deviceId,
      requestId,
      playbackId,
      resultId,
      ...(request.voiceTargetId ? { voiceTargetId: request.voiceTargetId } : {}),
      at: Date.now(),
    });
    return { type: "playback.repeat_result", requestId, playbackId };
  }

  private count(type: string, answer: Answer | undefined): Answer | undefined {
    this.deps.frames.inc({ type, result: answer && "error" in answer ? "error" : "ok" });
    return answer;
  }
}
