import { afterEach, beforeEach, describe, expect, it } from "vitest";
import { OsDeviceKeys } from "../../libs/os-store/os-keys.js";
import { createTestRedis, type TestRedis } from "../../test/helpers/test-redis.js";
import { AGENT, ORIGIN, receiptFor, registerVoiceRun } from "../../test/os/os-fixture.js";
import { resolveMembers } from "./member-resolution.js";
import { RouterStore } from "./router-store.js";
import type { EventOrigin, ResultClaim } from "./verdict.js";

const DEVICE = "lamp-members";

let t: TestRedis;
let store: RouterStore;
let runId: string;
let key: string;

beforeEach(async () => {
  t = createTestRedis("member-resolution");
  store = new RouterStore(t.redis, new OsDeviceKeys(t.keys, DEVICE), "test");
  ({ runId, idempotencyKey: key } = await registerVoiceRun(t, DEVICE));
});
afterEach(() => t.cleanup());

const origin: EventOrigin = {
  transportInstanceId: "transport",
  eventId: 7,
  agentId: AGENT,
  kind: "turn.result",
};
const claimFor = (deliveryId: string, idempotencyKey = key): ResultClaim => ({
  wireKind: "turn.result",
  serverInstanceId: ORIGIN,
  resultId: "result-1",
  outcome: "completed",
  fullText: "the answer",
  members: [{ deliveryId, idempotencyKey }],
});

describe("member resolution: each member by the exact (deliveryId, key) pair, read in one step", () => {
  it("routes a result whose member's receipt bound to its delivery", async () => {
    await store.bindReceipt(receiptFor(key, "delivery-a"));
    const verdict = await resolveMembers(store, claimFor("delivery-a"), origin, Date.now());
    expect(verdict.verdict).toBe("route");
    expect(verdict.verdict === "route" && verdict.routed.members).toEqual([
      { runId, deliveryId: "delivery-a", idempotencyKey: key },
    ]);
  });

  it("rejects a member whose key is bound to another delivery", async () => {
    await store.bindReceipt(receiptFor(key, "delivery-other"));
    const verdict = await resolveMembers(store, claimFor("delivery-a"), origin, Date.now());
    expect(verdict).toMatchObject({ verdict: "reject", reason: "DELIVERY_MISMATCH" });
  });

  it("rejects a member whose delivery belongs to another key, and one that names no run", async () => {
    await store.bindReceipt(receiptFor(key, "delivery-a"));
    const verdictFor = (claim: ResultClaim) => resolveMembers(store, claim, origin, Date.now());
    expect(await verdictFor(claimFor("delivery-a", "k-x"))).toMatchObject({
      verdict: "reject",
      reason: "KEY_MISMATCH",
    });
    expect(await verdictFor(claimFor("delivery-z", "k-z"))).toMatchObject({
      verdict: "reject",
      reason: "UNKNOWN_MEMBER",
    });
  });

  it("waits while the member's receipt has not bound", async () => {
    const verdict = await resolveMembers(store, claimFor("delivery-a"), origin, Date.now());
    expect(verdict).toEqual({ verdict: "wait", detail: "1 member receipt(s) not bound yet" });
  });
});
