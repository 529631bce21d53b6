import { afterEach, beforeEach, describe, expect, it } from "vitest";
import type { Receipt } from "../../libs/contract/receipt.js";
import { OsDeviceKeys } from "../../libs/os-store/os-keys.js";
import { createTestRedis, type TestRedis } from "../../test/helpers/test-redis.js";
import { AGENT, ORIGIN, receiptFor, registerVoiceRun } from "../../test/os/os-fixture.js";
import { resolveMembers } from "./member-resolution.js";
import { RouterStore } from "./router-store.js";
import type { EventOrigin, ResultClaim } from "./verdict.js";

const DEVICE = "lamp-members";

/** A real store whose delivery lookup lets a receipt bind right after it read: the race of a live session. */
class BindsAfterDeliveryLookup extends RouterStore {
  bindNext: Receipt | undefined;

  override async runIdByDelivery(deliveryId: string): Promise<string | null> {
    const runId = await super.runIdByDelivery(deliveryId);
    const receipt = this.bindNext;
    this.bindNext = undefined;
    if (receipt) await this.bindReceipt(receipt);
    return runId;
  }
}

let t: TestRedis;
let store: BindsAfterDeliveryLookup;
let runId: string;
let key: string;

beforeEach(async () => {
  t = createTestRedis("member-resolution");
  store = new BindsAfterDeliveryLookup(t.redis, new OsDeviceKeys(t.keys, DEVICE), "test");
  ({ runId, idempotencyKey: key } = await registerVoiceRun(t, DEVICE));
});
afterEach(() => t.cleanup());

const origin: EventOrigin = {
  transportInstanceId: "transport",
  eventId: 7,
  agentId: AGENT,
  kind: "turn.result",
};
const claimFor = (deliveryId: string): ResultClaim => ({
  wireKind: "turn.result",
  serverInstanceId: ORIGIN,
  resultId: "result-1",
  outcome: "completed",
  fullText: "the answer",
  members: [{ deliveryId, idempotencyKey: key }],
});

describe("member resolution while receipts bind", () => {
  it("routes a result whose member's receipt binds between the delivery and the key lookup", async () => {
    store.bindNext = receiptFor(key, "delivery-a");
    const verdict = await resolveMembers(store, claimFor("delivery-a"), origin, Date.now());
    expect(verdict.verdict).toBe("route");
    expect(verdict.verdict === "route" && verdict.routed.members).toEqual([
      { runId, deliveryId: "delivery-a", idempotencyKey: key },
    ]);
  });

  it("still rejects a member whose key bound to another delivery meanwhile", async () => {
    store.bindNext = receiptFor(key, "delivery-other");
    const verdict = await resolveMembers(store, claimFor("delivery-a"), origin, Date.now());
    expect(verdict).toMatchObject({ verdict: "reject", reason: "DELIVERY_MISMATCH" });
  });

  it("waits while the member's receipt has not bound", async () => {
    const verdict = await resolveMembers(store, claimFor("delivery-a"), origin, Date.now());
    expect(verdict).toEqual({ verdict: "wait", detail: "1 member receipt(s) not bound yet" });
  });
});
