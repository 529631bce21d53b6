import { afterEach, beforeEach, describe, expect, it } from "vitest";
import { OS_END_REASONS } from "../../libs/contract/run-update.js";
import { OsDeviceKeys } from "../../libs/os-store/os-keys.js";
import { hostServices, type HostedServices } from "../../libs/service/service-host.js";
import { deviceGatewayService } from "../../services/device-gateway/definition.js";
import { routerService } from "../../services/router/definition.js";
import { runResolverService } from "../../services/run-resolver/definition.js";
import { freePort } from "../../libs/redis/redis-server-process.js";
import { createTestRedis, waitFor, type TestRedis } from "../helpers/test-redis.js";
import { ScriptedHarnessPeer } from "./harness-peer.js";
import {
  AGENT,
  HARNESS_SECRET,
  osToken,
  MACHINE,
  markActive,
  osEnv,
  pushAndSettle,
  receiptFor,
  rejectionsOf,
  resultEvent,
  runOf,
  runUpdatesOf,
  seedRun,
} from "./os-fixture.js";

const DEVICE = "lamp-deadlines";
/** Runs seeded with this expiry reach their deadline (grace 0) shortly after the services started. */
/** A deadline far enough out that the router's Harness link is live by then, even on a loaded machine. */
const SOON = 3_000;
/** Long enough for the router to connect and hold a result before the deadline passes. */
const AFTER_A_RESULT_IS_HELD = 2_000;

let t: TestRedis;
let peer: ScriptedHarnessPeer;
let services: HostedServices | undefined;
let device: OsDeviceKeys;

beforeEach(async () => {
  t = createTestRedis("deadlines");
  peer = await ScriptedHarnessPeer.start(HARNESS_SECRET);
  device = new OsDeviceKeys(t.keys, DEVICE);
});

afterEach(async () => {
  await services?.stop();
  services = undefined;
  await peer.close();
  await t.cleanup();
});

/** Starts the OS side with a zero grace and a fast sweep (once the runs of the test are seeded), device known. */
async function startOs(): Promise<HostedServices> {
  await markActive(t, DEVICE);
  services = await hostServices(
    "test",
    [deviceGatewayService, routerService, runResolverService],
    osEnv(t, peer, {
      GATEWAY_INSTANCE_ID: "gateway-deadlines",
      RUN_DEADLINE_GRACE_MS: "0",
      RUN_DEADLINE_SWEEP_MS: "100",
    }),
  );
  await peer.untilConnected(DEVICE);
  return services;
}

function endedRun(runId: string) {
  return waitFor(
    () => runOf(t, DEVICE, runId),
    (found) => found?.state !== "pending",
  );
}

const receiptGets = (key: string) =>
  peer
    .framesOf(DEVICE, "receipt.get")
    .filter((frame) => "idempotencyKey" in frame && frame.idempotencyKey === key);

async function unknownUpdatesOf(runId: string) {
  return (await runUpdatesOf(t, DEVICE)).filter(
    (update) => update.runId === runId && update.change === "unknown",
  );
}

describe("router: a run ends unknown at once when it can never get a result", () => {
  it("a receipt that ends unknown ends its run with the receipt's error code, and a run.update says so", async () => {
    const runId = await seedRun(t, peer, DEVICE, { key: "key-A", deliveryId: "delivery-A" });
    const os = await startOs();
    const receipt = {
      ...receiptFor("key-A", "delivery-A"),
      state: "unknown" as const,
      error: { code: "ENGINE_EXITED", message: "the engine exited" },
    };
    await pushAndSettle(t, peer, os.url, DEVICE, {
      type: "event",
      kind: "receipt.updated",
      eventId: 10,
      serverInstanceId: "transport-instance",
      machineId: MACHINE,
      agentId: AGENT,
      payload: { idempotencyKey: "key-A", receipt },
    });
    expect(await runOf(t, DEVICE, runId)).toMatchObject({ state: "unknown", endReason: "ENGINE_EXITED" });
    expect(await unknownUpdatesOf(runId)).toMatchObject([
      { state: "unknown", reason: "ENGINE_EXITED", receiptState: "unknown" },
    ]);
    expect(await t.redis.zscore(device.pendingRuns, runId)).toBeNull();
  });

  it("a send the Harness refuses ends the run with the refusal's code, and a run.update says so", async () => {
    peer.refuseSends = "AGENT_NOT_FOUND";
    await startOs();
    const runId = await seedRun(t, peer, DEVICE, { key: "key-R" });
    expect(await endedRun(runId)).toMatchObject({ state: "unknown", endReason: "AGENT_NOT_FOUND" });
    expect(await unknownUpdatesOf(runId)).toMatchObject([{ state: "unknown", reason: "AGENT_NOT_FOUND" }]);
  });
});

describe("router: a run still pending at its deadline ends unknown with the OS's reason", () => {
  it("no receipt anywhere: the Harness is asked once more, then the run ends RECEIPT_NOT_FOUND", async () => {
    const runId = await seedRun(t, peer, DEVICE, {
      key: "key-N",
      unsent: true,
      voiceTargetExpiresAt: Date.now() + SOON,
    });
    await startOs();
    expect(await endedRun(runId)).toMatchObject({
      state: "unknown",
      endReason: OS_END_REASONS.receiptNotFound,
    });
    expect(await unknownUpdatesOf(runId)).toMatchObject([
      { state: "unknown", reason: OS_END_REASONS.receiptNotFound },
    ]);
    // The deadline asks once more unless the run had already ended; the reconciliation after hello asks only while
    // the run is pending (on a slow start the deadline can come first). The input is never sent.
    expect(peer.framesOf(DEVICE, "hello")).toHaveLength(1);
    expect(receiptGets("key-N").length).toBeGreaterThanOrEqual(1);
    expect(receiptGets("key-N").length).toBeLessThanOrEqual(2);
    expect(peer.framesOf(DEVICE, "turn.send")).toHaveLength(0);
    expect(await t.redis.exists(device.pendingRuns, device.runDeadlines)).toBe(0);
  });

  it("no Harness to ask: the run waits a further grace past its deadline, then ends HARNESS_UNREACHABLE", async () => {
    const graceMs = 400;
    const expiresAt = Date.now();
    const runId = await seedRun(t, peer, DEVICE, {
      key: "key-U",
      unsent: true,
      voiceTargetExpiresAt: expiresAt,
    });
    await markActive(t, DEVICE);
    // The Harness URL names a port nothing listens on: the router never gets a session.
    services = await hostServices(
      "test",
      [deviceGatewayService, routerService, runResolverService],
      osEnv(t, peer, {
        GATEWAY_INSTANCE_ID: "gateway-deadlines",
        HARNESS_URL: `ws://127.0.0.1:${await freePort()}/v1/harness/ws`,
        RUN_DEADLINE_GRACE_MS: String(graceMs),
        RUN_DEADLINE_SWEEP_MS: "100",
      }),
    );
    const ended = await waitFor(
      () => runOf(t, DEVICE, runId),
      (found) => found?.state !== "pending",
      { timeoutMs: 15_000 },
    );
    expect(ended).toMatchObject({ state: "unknown", endReason: OS_END_REASONS.harnessUnreachable });
    const updates = await unknownUpdatesOf(runId);
    expect(updates).toMatchObject([{ state: "unknown", reason: OS_END_REASONS.harnessUnreachable }]);
    // Not at the deadline itself: only once a whole further grace passed without anyone to ask.
    expect(updates[0]?.at).toBeGreaterThanOrEqual(expiresAt + 2 * graceMs);
    expect(peer.framesOf(DEVICE, "hello")).toHaveLength(0);
  });

  it("receipt known, no result: the run ends RESULT_NOT_RECEIVED", async () => {
    const runId = await seedRun(t, peer, DEVICE, {
      key: "key-K",
      deliveryId: "delivery-K",
      voiceTargetExpiresAt: Date.now() + SOON,
    });
    await startOs();
    expect(await endedRun(runId)).toMatchObject({
      state: "unknown",
      endReason: OS_END_REASONS.resultNotReceived,
      receiptState: "delivered",
    });
    expect(await unknownUpdatesOf(runId)).toMatchObject([
      { state: "unknown", reason: OS_END_REASONS.resultNotReceived, receiptState: "delivered" },
    ]);
  });

  it("a result held for a receipt that never binds: the run ends RESULT_HELD_UNBOUND, the result is given up as RECEIPTS_NEVER_BOUND and its frame stays retrievable", async () => {
    const runId = await seedRun(t, peer, DEVICE, {
      key: "key-H",
      unsent: true,
      voiceTargetExpiresAt: Date.now() + AFTER_A_RESULT_IS_HELD,
    });
    const os = await startOs();
    const held = resultEvent({ resultId: "r-held", members: [["delivery-key-H", "key-H"]] });
    await pushAndSettle(t, peer, os.url, DEVICE, held);
    expect(await t.redis.hlen(device.waiting)).toBe(1);

    expect(await endedRun(runId)).toMatchObject({ state: "unknown", endReason: OS_END_REASONS.resultHeld });
    expect(await unknownUpdatesOf(runId)).toMatchObject([{ reason: OS_END_REASONS.resultHeld }]);
    expect(
      await waitFor(
        () => t.redis.hlen(device.waiting),
        (n) => n === 0,
      ),
    ).toBe(0);
    expect(await rejectionsOf(t, DEVICE)).toMatchObject([
      { reason: "RECEIPTS_NEVER_BOUND", rejectedBy: "router", resultId: "r-held", eventId: held.eventId },
    ]);

    const token = await osToken(DEVICE);
    const get = (path: string) =>
      fetch(`${os.url}${path}`, { headers: { authorization: `Bearer ${token}` } }).then((r) => r.json());
    expect(await get("/v1/held-results")).toEqual({ deviceId: DEVICE, heldResults: [] });
    expect(await get("/v1/held-results?state=expired")).toEqual({
      deviceId: DEVICE,
      heldResults: [
        {
          id: expect.any(String),
          kind: "turn.result",
          agentId: AGENT,
          transportInstanceId: "transport-instance",
          eventId: held.eventId,
          resultId: "r-held",
          serverInstanceId: "originating-instance",
          idempotencyKeys: ["key-H"],
          heldAt: expect.stringMatching(/^\d{4}-\d\d-\d\dT/),
          reason: "RECEIPTS_NEVER_BOUND",
          expiredAt: expect.stringMatching(/^\d{4}-\d\d-\d\dT/),
          frame: held,
        },
      ],
    });
  });
});

describe("router: reconciliation and legacy summaries around ended runs", () => {
  it("after hello, receipt.get is asked only for runs whose receipt is absent or not final", async () => {
    await seedRun(t, peer, DEVICE, { key: "key-A", deliveryId: "delivery-A", receiptState: "completed" });
    await seedRun(t, peer, DEVICE, { key: "key-B", deliveryId: "delivery-B" });
    await startOs();
    // Pending runs are reconciled in creation order, one at a time: once B is asked, A has had its turn.
    expect(
      await waitFor(
        () => receiptGets("key-B").length,
        (n) => n === 1,
      ),
    ).toBe(1);
    expect(receiptGets("key-A")).toHaveLength(0);
  });

  it("a plain legacy summary applies once the agent's stuck run ended at its deadline", async () => {
    const runs = {
      A: await seedRun(t, peer, DEVICE, { key: "key-A", deliveryId: "delivery-A" }),
      stuck: await seedRun(t, peer, DEVICE, {
        key: "key-S",
        unsent: true,
        voiceTargetExpiresAt: Date.now() + SOON,
      }),
    };
    const os = await startOs();
    expect(await endedRun(runs.stuck)).toMatchObject({ endReason: OS_END_REASONS.receiptNotFound });
    await pushAndSettle(t, peer, os.url, DEVICE, {
      type: "event",
      kind: "turn.summary",
      eventId: 20,
      serverInstanceId: "transport-instance",
      machineId: MACHINE,
      agentId: AGENT,
      payload: { kind: "summary", text: "legacy answer", idempotencyKey: "key-A" },
    });
    expect(await runOf(t, DEVICE, runs.A)).toMatchObject({
      state: "resolved",
      resultId: "legacy-summary:delivery-A",
    });
    expect(await rejectionsOf(t, DEVICE)).toEqual([]);
  });
});
