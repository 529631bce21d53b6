import { randomUUID } from "node:crypto";
import { signToken } from "../../libs/auth/tokens.js";
import { hostServices, type HostedServices } from "../../libs/service/service-host.js";
import { deviceGatewayService } from "../../services/device-gateway/definition.js";
import { ttsDispatcherService } from "../../services/tts-dispatcher/definition.js";
import { createTestRedis, waitFor, type TestRedis } from "../helpers/test-redis.js";
import { GATEWAY_ID, OsStoreFixture } from "../tts/os-store-fixture.js";
import { ttsTestEnv } from "../tts/tts-service.js";
import { voiceRequestFrame } from "../os/os-fixture.js";
import { ProbedSocket } from "./probed-socket.js";

export const LAMP_SECRET = "hostile-lamp-secret-0123456789abcdef";
export const voiceRequest = (requestId = randomUUID(), text = "turn on the lights") =>
  voiceRequestFrame(requestId, text);

/** What the other device owns: ids a hostile device may try to use, and text it must never see. */
export interface OtherDevice {
  deviceId: string;
  runIds: string[];
  resultId: string;
  playbackId: string;
  /** Strings that must never reach another device (ids it did not send, the answer text). */
  secrets: string[];
}

/**
 * The OS edge with real state: device-gateway (Lamp WebSocket, OS API) and tts-dispatcher in-process, and a second
 * device that has a registered run and a result that was spoken and acked over its own real socket.
 */
export class LampWorld {
  private constructor(
    readonly t: TestRedis,
    readonly services: HostedServices,
    readonly store: OsStoreFixture,
    readonly other: OtherDevice,
    private readonly otherSocket: ProbedSocket,
  ) {}

  static async start(label: string, otherDeviceId = "lamp-other"): Promise<LampWorld> {
    const t = createTestRedis(label);
    const services = await hostServices(
      "hostile",
      [deviceGatewayService, ttsDispatcherService],
      ttsTestEnv(t, {
        AUTH_JWT_SECRET: LAMP_SECRET,
        GATEWAY_INSTANCE_ID: GATEWAY_ID,
        RECEIPT_WAIT_MS: "0",
        // Every case must reach validation (the limits have their own tests). A huge burst with a slow refill keeps
        // the bucket key from expiring mid-run, where a key snapshot would see it vanish under a rejected case.
        LAMP_RATE_LIMIT_BURST: "1000000",
        LAMP_RATE_LIMIT_PER_SECOND: "1",
        LAMP_MAX_PENDING_RUNS: "1000000",
      }),
    );
    const store = new OsStoreFixture(t.redis, t.keys);
    const socket = await ProbedSocket.open(
      lampUrl(services.url),
      await signToken(LAMP_SECRET, { audience: "os", sub: otherDeviceId, role: "device" }),
      "sentinel",
    );
    const request = voiceRequest(randomUUID(), "SECRET-OTHER-prompt what is my bank pin");
    const { answers } = await socket.exchange({ text: JSON.stringify(request), binary: false });
    const registered = answers[0] as { runId: string; idempotencyKey: string };
    const spoken = await speakResult(store, socket, otherDeviceId, "SECRET-OTHER-answer the pin is 4711");
    const other: OtherDevice = {
      deviceId: otherDeviceId,
      runIds: [registered.runId, spoken.runId],
      resultId: spoken.resultId,
      playbackId: spoken.playbackId,
      secrets: [
        request.requestId,
        registered.runId,
        registered.idempotencyKey,
        spoken.runId,
        spoken.resultId,
        spoken.playbackId,
        "SECRET-OTHER",
      ],
    };
    return new LampWorld(t, services, store, other, socket);
  }

  get lampUrl(): string {
    return lampUrl(this.services.url);
  }

  token(deviceId: string, role: "device" | "operator" = "device"): Promise<string> {
    return signToken(LAMP_SECRET, { audience: "os", sub: deviceId, role });
  }

  /** The other device's own socket is still served (a hostile peer cannot take the gateway down for others). */
  otherSocketOpen(): boolean {
    return this.otherSocket.closeCode === undefined;
  }

  async stop(): Promise<void> {
    this.otherSocket.close();
    await this.services.stop();
    await this.t.cleanup();
  }
}

/**
 * Stores a resolved result for the device as the run-resolver would; tts-dispatcher speaks it to the device's
 * socket, which acks it: the entry ends `played` and nothing about it changes afterwards.
 */
export async function speakResult(
  store: OsStoreFixture,
  socket: ProbedSocket,
  deviceId: string,
  fullText: string,
) {
  const runId = `run-${deviceId}-${randomUUID()}`;
  await store.seedRun(deviceId, { runId, createdAt: Date.now() });
  const resultId = `result-${deviceId}-${randomUUID()}`;
  const resultKey = await store.seedResolvedResult(deviceId, { resultId, runIds: [runId], fullText });
  const start = await waitFor(
    () => socket.takeUnsolicited().find((frame) => frame.type === "playback.start"),
    (frame) => frame !== undefined,
  );
  if (!start) throw new Error(`${deviceId} was never asked to speak its result`);
  const playbackId = String(start.playbackId);
  for (const state of ["started", "finished"])
    await socket.exchange({
      text: JSON.stringify({ type: "playback.ack", playbackId, state }),
      binary: false,
    });
  const played = await waitFor(
    () => store.outbox(deviceId, resultKey),
    (entry) => entry?.state === "played",
  );
  if (played?.state !== "played") throw new Error(`${deviceId}'s result did not reach played`);
  return { runId, resultId, playbackId };
}

export const lampUrl = (httpUrl: string) => `${httpUrl.replace(/^http/, "ws")}/v1/lamp/ws`;

/** Secrets of `other` that appear in what a hostile device received although it never sent them itself. */
export function disclosed(other: OtherDevice, received: string, sent: string): string[] {
  return other.secrets.filter((secret) => received.includes(secret) && !sent.includes(secret));
}
