import { randomUUID } from "node:crypto";
import { signToken } from "../../libs/auth/tokens.js";
import { STREAM_CATALOG } from "../../libs/contract/catalog.js";
import type { Receipt } from "../../libs/contract/receipt.js";
import { runUpdateRecordSchema, type RunUpdateRecord } from "../../libs/contract/run-update.js";
import { markDeviceActive } from "../../libs/os-store/device-activity.js";
import { OsDeviceKeys } from "../../libs/os-store/os-keys.js";
import { parseRunRecord, type RunRecord } from "../../libs/os-store/run-record.js";
import {
  registerRunScript,
  RunRegistration,
  type RunLimits,
} from "../../services/device-gateway/run-registration.js";
import { RouterStore } from "../../services/router/router-store.js";
import { entriesAdded, groupDrained } from "../helpers/stream-progress.js";
import { waitFor, type TestRedis } from "../helpers/test-redis.js";
import type { ScriptedHarnessPeer } from "./harness-peer.js";
import { osRetentionIndex } from "../../libs/retention/retention-keys.js";

/** Signs OS tokens (aud `os`: Lamps and operators). */
export const JWT_SECRET = "os-test-secret-0123456789abcdef-0123";
/** Signs the router's Harness tokens (aud `harness`), verified by the scripted peer or the real harness-gateway. */
export const HARNESS_SECRET = "os-test-harness-secret-0123456789abcdef";
export const AGENT = "agent-fixture";
export const MACHINE = "machine-fixture";

/** A `voice.request` frame from a Lamp to the fixture's agent, spoken in the kitchen. */
export const voiceRequestFrame = (requestId: string, text = "build a house") => ({
  type: "voice.request",
  requestId,
  agentId: AGENT,
  machineId: MACHINE,
  text,
  voiceTarget: { id: "kitchen" },
  replyRoute: "voice",
});
export const ORIGIN = "originating-instance";
/** Limits no fixture reaches: tests that seed runs are about something else than the device limits. */
export const UNLIMITED_RUNS: RunLimits = {
  rateBurst: 1_000_000,
  ratePerSecond: 1_000_000,
  maxPendingRuns: 1_000_000,
};

/** Environment for OS services under test: a fresh prefix, the scripted peer, short leases and waits. */
export function osEnv(t: TestRedis, peer: ScriptedHarnessPeer, extra: Record<string, string> = {}) {
  return {
    REDIS_URL: t.url,
    KEY_PREFIX: t.keys.prefix,
    STREAM_PARTITIONS: String(t.keys.partitions),
    PORT: "0",
    LOG_LEVEL: "silent",
    AUTH_JWT_SECRET: JWT_SECRET,
    HARNESS_JWT_SECRET: HARNESS_SECRET,
    HARNESS_URL: peer.url,
    ROUTER_LEASE_TTL_MS: "1500",
    HARNESS_REQUEST_TIMEOUT_MS: "1000",
    HARNESS_RECONNECT_MS: "100",
    STREAM_BLOCK_MS: "100",
    STREAM_RETRY_DELAY_MS: "50",
    ...extra,
  };
}

/** An OS token (aud `os`) for a Lamp, or an operator of the OS API. */
export const osToken = (sub: string, role: "device" | "operator" = "device") =>
  signToken(JWT_SECRET, { audience: "os", sub, role });

export interface SeededRun {
  key: string;
  deliveryId?: string;
  agentId?: string;
  serverInstanceId?: string;
  replyRoute?: "voice" | "display" | "silent";
  /** Receipt state bound with `deliveryId` (default `delivered`). */
  receiptState?: Receipt["state"];
  /** When the run's voice target expires (default ten minutes from now). */
  voiceTargetExpiresAt?: number;
  /** Drops the send command the registration queued, so the router never sends the input (no receipt anywhere). */
  unsent?: boolean;
}

/**
 * Registers a pending run exactly as the device-gateway does (same Lua step) with a chosen key and, when a
 * deliveryId is given, binds its receipt as the router would; the peer learns the receipt too.
 */
export async function seedRun(
  t: TestRedis,
  peer: ScriptedHarnessPeer,
  deviceId: string,
  spec: SeededRun,
): Promise<string> {
  const device = new OsDeviceKeys(t.keys, deviceId);
  const runId = `run-${spec.key}-${randomUUID().slice(0, 8)}`;
  const now = Date.now();
  const command = JSON.stringify({ kind: "send", runId, replyTo: "seed", at: now });
  await registerRunScript.run(t.redis, [device.base], {
    run: {
      runId,
      requestId: randomUUID(),
      idempotencyKey: spec.key,
      requestHash: "seed",
      deviceId,
      agentId: spec.agentId ?? AGENT,
      machineId: MACHINE,
      text: `prompt for ${spec.key}`,
      voiceTargetId: "voice-target-1",
      voiceTargetExpiresAt: spec.voiceTargetExpiresAt ?? now + 600_000,
      replyRoute: spec.replyRoute ?? "voice",
    },
    now,
    sendCommandJson: command,
    limits: UNLIMITED_RUNS,
  });
  if (spec.unsent) await t.redis.del(device.commands);
  if (spec.deliveryId) {
    const receipt: Receipt = {
      ...receiptFor(spec.key, spec.deliveryId, spec.agentId ?? AGENT, spec.serverInstanceId),
      state: spec.receiptState ?? "delivered",
    };
    await new RouterStore(t.redis, device, "seed").bindReceipt(receipt);
    peer.remember(deviceId, receipt);
  }
  await markActive(t, deviceId);
  return runId;
}

/** Marks a device active for the routers, as the device-gateway does after a Lamp connect or a registration. */
export async function markActive(t: TestRedis, deviceId: string): Promise<void> {
  await markDeviceActive(t.redis, t.keys, t.keys.partitions, deviceId);
}

/** Registers one voice run through the device-gateway's own registration (no router, nothing sent). */
export async function registerVoiceRun(t: TestRedis, deviceId: string) {
  const registration = await new RunRegistration(
    t.redis,
    t.keys,
    "gateway-test",
    60_000,
    UNLIMITED_RUNS,
    t.keys.partitions,
    osRetentionIndex(t.redis, t.keys),
  ).register(deviceId, {
    type: "voice.request",
    requestId: randomUUID(),
    agentId: AGENT,
    machineId: MACHINE,
    text: "a question",
    voiceTarget: { id: "target-1" },
    replyRoute: "voice",
  });
  if (registration.status !== "created") throw new Error("run not registered");
  return { runId: registration.runId, idempotencyKey: registration.idempotencyKey };
}

export function receiptFor(key: string, deliveryId: string, agentId = AGENT, instance = ORIGIN): Receipt {
  return {
    idempotencyKey: key,
    deliveryId,
    operation: "turn.send",
    state: "delivered",
    machineId: MACHINE,
    agentId,
    serverInstanceId: instance,
    turnId: null,
    error: null,
    at: Date.now(),
  };
}

export async function runOf(t: TestRedis, deviceId: string, runId: string): Promise<RunRecord | undefined> {
  return parseRunRecord(await t.redis.hgetall(new OsDeviceKeys(t.keys, deviceId).run(runId)));
}

export async function statesOf(t: TestRedis, deviceId: string, runIds: Record<string, string>) {
  const states: Record<string, string | undefined> = {};
  for (const [name, runId] of Object.entries(runIds)) states[name] = (await runOf(t, deviceId, runId))?.state;
  return states;
}

/** Sum of `os_router_frames_total` on a service's /metrics: one per Harness frame the router staged durably. */
export async function framesHandled(baseUrl: string): Promise<number> {
  const text = await (await fetch(`${baseUrl}/metrics`)).text();
  let total = 0;
  for (const line of text.split("\n"))
    if (line.startsWith("os_router_frames_total{")) total += Number(line.split(" ").at(-1));
  return total;
}

/** True when the run-resolver group has read and acked everything in `os.routed`. */
export function resolverIdle(t: TestRedis): Promise<boolean> {
  const { osRouted } = STREAM_CATALOG;
  return groupDrained(t.redis, t.keys.stream(osRouted.name), osRouted.consumers.runResolver.group);
}

/**
 * Entries ever appended to a pipeline stream over all its partitions: what the services published, whether or
 * not the services' trimming has removed the consumed ones since.
 */
export async function entriesAppended(t: TestRedis, name: string): Promise<number> {
  const partitions = Array.from({ length: t.keys.partitions }, (_, partition) => partition);
  const counts = await Promise.all(
    partitions.map((partition) => entriesAdded(t.redis, t.keys.stream(name, partition))),
  );
  return counts.reduce((sum, count) => sum + count, 0);
}

export async function rejectionsOf(t: TestRedis, deviceId: string) {
  const entries = await t.redis.xrange(new OsDeviceKeys(t.keys, deviceId).rejections, "-", "+");
  return entries.map(([, fields]) => JSON.parse(fields[1] ?? "{}") as { reason: string; rejectedBy: string });
}

/** The device's run.update log (`B:run-updates`), oldest first. */
export async function runUpdatesOf(t: TestRedis, deviceId: string): Promise<RunUpdateRecord[]> {
  const entries = await t.redis.xrange(new OsDeviceKeys(t.keys, deviceId).runUpdates, "-", "+");
  return entries.map(([, fields]) => runUpdateRecordSchema.parse(JSON.parse(fields[1] ?? "null")));
}

let nextEventId = 100;

/** A `turn.result` event as the Harness sends it (members as [deliveryId, key] pairs). */
export function resultEvent(spec: {
  resultId: string;
  members: [deliveryId: string, key: string][];
  agentId?: string;
  serverInstanceId?: string;
  fullText?: string;
  outcome?: "completed" | "failed" | "cancelled";
  transportInstanceId?: string;
}) {
  return {
    type: "event",
    kind: "turn.result",
    eventId: nextEventId++,
    serverInstanceId: spec.transportInstanceId ?? "transport-instance",
    machineId: MACHINE,
    agentId: spec.agentId ?? AGENT,
    payload: {
      serverInstanceId: spec.serverInstanceId ?? ORIGIN,
      resultId: spec.resultId,
      correlation: {
        scope: spec.members.length === 1 ? "input" : "group",
        inputs: spec.members.map(([deliveryId, idempotencyKey]) => ({ deliveryId, idempotencyKey })),
      },
      outcome: spec.outcome ?? "completed",
      fullText: spec.fullText ?? `answer of ${spec.resultId}`,
    },
  };
}

/** Pushes one frame and waits until the router staged it and the run-resolver drained `os.routed`. */
export async function pushAndSettle(
  t: TestRedis,
  peer: ScriptedHarnessPeer,
  baseUrl: string,
  deviceId: string,
  frame: unknown,
): Promise<void> {
  const before = await framesHandled(baseUrl);
  peer.push(deviceId, frame);
  const handled = await waitFor(
    () => framesHandled(baseUrl),
    (n) => n > before,
  );
  if (handled <= before) throw new Error("router did not stage the frame in time");
  if (!(await waitFor(() => resolverIdle(t), Boolean))) throw new Error("run-resolver did not drain");
}

/** A completed result `r-1` (from ORIGIN) stored for `deviceId`, as "say that again" finds it. */
export async function storeRepeatableResult(t: TestRedis, deviceId: string): Promise<void> {
  const device = new OsDeviceKeys(t.keys, deviceId);
  await t.redis.set(device.resultId("r-1"), `${ORIGIN}|r-1`);
  await t.redis.hset(device.result(`${ORIGIN}|r-1`), {
    resultId: "r-1",
    serverInstanceId: ORIGIN,
    deviceId,
    agentId: "agent-1",
    outcome: "completed",
    fullText: "hi",
    members: JSON.stringify([{ runId: "run-1", deliveryId: "d-1", idempotencyKey: "k-1" }]),
    contentHash: "hash-1",
    storedAt: Date.now(),
  });
}
