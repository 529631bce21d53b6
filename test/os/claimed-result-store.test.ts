import { Registry } from "prom-client";
import { afterEach, beforeEach, describe, expect, it } from "vitest";
import type { OsRouted } from "../../libs/contract/pipeline-payloads.js";
import { createLogger } from "../../libs/logging/logger.js";
import { OsDeviceKeys, resultKeyOf } from "../../libs/os-store/os-keys.js";
import { CrashPoint } from "../../libs/test-support/crash-point.js";
import { createTestRedis, type TestRedis } from "../helpers/test-redis.js";
import { AGENT, ORIGIN, receiptFor, registerVoiceRun } from "./os-fixture.js";
import { RouterStore } from "../../services/router/router-store.js";
import { ResultResolution } from "../../services/run-resolver/result-resolution.js";

const DEVICE = "lamp-resolution";
const LEASE_OWNER = "router-under-test";

let t: TestRedis;
let device: OsDeviceKeys;
let router: RouterStore;
let registry: Registry;
let resolution: ResultResolution;

beforeEach(async () => {
  t = createTestRedis("result-resolution");
  device = new OsDeviceKeys(t.keys, DEVICE);
  router = new RouterStore(t.redis, device, LEASE_OWNER);
  await t.redis.set(device.lease, LEASE_OWNER);
  registry = new Registry();
  resolution = new ResultResolution(
    t.redis,
    t.keys,
    new CrashPoint({}, t.redis, t.keys),
    createLogger("run-resolver", "silent"),
    registry,
  );
});
afterEach(() => t.cleanup());

/** A run registered and bound to `deliveryId`, as the router finds it when it validates a result. */
async function boundRun(deliveryId: string) {
  const { runId, idempotencyKey } = await registerVoiceRun(t, DEVICE);
  await router.bindReceipt(receiptFor(idempotencyKey, deliveryId));
  return { runId, deliveryId, idempotencyKey };
}

function routed(resultId: string, members: OsRouted["members"]): OsRouted {
  return {
    deviceId: DEVICE,
    agentId: AGENT,
    serverInstanceId: ORIGIN,
    resultId,
    outcome: "completed",
    fullText: "the answer",
    members,
    contentHash: "a".repeat(64),
    source: { wireKind: "turn.result", transportInstanceId: "transport", eventId: 1 },
    routedAt: Date.now(),
  };
}

const stateOf = async (runId: string) => t.redis.hget(device.run(runId), "state");
/** The metric's value summed over its series, or over those with `outcome` when given. */
const metric = async (name: string, outcome?: string) =>
  (await registry.getSingleMetric(name)?.get())?.values
    .filter(({ labels }) => outcome === undefined || labels.outcome === outcome)
    .reduce((sum, { value }) => sum + value, 0);

describe("run-resolver: stores a routed result and resolves the runs the router claimed for it", () => {
  it("resolves every claimed member and stores the result once; a redelivery changes nothing", async () => {
    const a = await boundRun("delivery-a");
    const b = await boundRun("delivery-b");
    const result = routed("r-1", [a, b]);
    await router.claimResult(resultKeyOf(ORIGIN, "r-1"), result.contentHash, [a.runId, b.runId]);
    await resolution.apply(result);
    await resolution.apply(result);
    expect([await stateOf(a.runId), await stateOf(b.runId)]).toEqual(["resolved", "resolved"]);
    expect(await t.redis.hget(device.result(resultKeyOf(ORIGIN, "r-1")), "contentHash")).toBe(
      result.contentHash,
    );
    expect(await metric("os_result_runs_skipped_total")).toBe(0);
  });

  it("leaves a member that reached its deadline after the claim as it ended, resolves the rest, and counts it", async () => {
    const a = await boundRun("delivery-a");
    const b = await boundRun("delivery-b");
    const result = routed("r-1", [a, b]);
    await router.claimResult(resultKeyOf(ORIGIN, "r-1"), result.contentHash, [a.runId, b.runId]);
    await router.endRun(a.runId, "RESULT_NOT_RECEIVED", Date.now());
    await resolution.apply(result);
    expect([await stateOf(a.runId), await stateOf(b.runId)]).toEqual(["unknown", "resolved"]);
    expect(await metric("os_result_runs_skipped_total")).toBe(1);
  });

  it("stores nothing for a result no router claimed, and counts it", async () => {
    const a = await boundRun("delivery-a");
    await resolution.apply(routed("r-1", [a]));
    expect(await stateOf(a.runId)).toBe("pending");
    expect(await t.redis.exists(device.result(resultKeyOf(ORIGIN, "r-1")))).toBe(0);
    expect(await metric("os_results_applied_total", "unclaimed")).toBe(1);
  });

  it("never resolves a listed run claimed for another result", async () => {
    const a = await boundRun("delivery-a");
    const b = await boundRun("delivery-b");
    const result = routed("r-1", [a, b]);
    await router.claimResult(resultKeyOf(ORIGIN, "r-0"), "b".repeat(64), [a.runId]);
    await t.redis.set(device.resultClaim(resultKeyOf(ORIGIN, "r-1")), result.contentHash);
    await resolution.apply(result);
    expect([await stateOf(a.runId), await stateOf(b.runId)]).toEqual(["pending", "pending"]);
    expect(await metric("os_result_runs_skipped_total")).toBe(2);
  });
});
