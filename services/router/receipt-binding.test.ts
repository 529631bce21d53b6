import { afterEach, beforeEach, describe, expect, it } from "vitest";
import type { Receipt } from "../../libs/contract/receipt.js";
import { OsDeviceKeys } from "../../libs/os-store/os-keys.js";
import { runReceipt } from "../../libs/os-store/run-record.js";
import { createTestRedis, type TestRedis } from "../../test/helpers/test-redis.js";
import { receiptFor, registerVoiceRun, runOf } from "../../test/os/os-fixture.js";
import { RouterStore } from "./router-store.js";

const DEVICE = "lamp-receipts";

let t: TestRedis;
let store: RouterStore;
let runId: string;
let key: string;
beforeEach(async () => {
  t = createTestRedis("receipt-binding");
  store = new RouterStore(t.redis, new OsDeviceKeys(t.keys, DEVICE), "test");
  ({ runId, idempotencyKey: key } = await registerVoiceRun(t, DEVICE));
});
afterEach(() => t.cleanup());

const receipt = (state: Receipt["state"]): Receipt => ({ ...receiptFor(key, "delivery-a"), state });
/** The receipt the run holds now (undefined without a run or a receipt). */
const boundReceipt = async () => {
  const run = await runOf(t, DEVICE, runId);
  return run && runReceipt(run);
};

describe("router receipt binding", () => {
  it("moves the run's receipt forward only: a duplicated or reordered older receipt refreshes nothing", async () => {
    expect((await store.bindReceipt(receipt("delivered"))).outcome).toBe("bound");
    expect((await store.bindReceipt(receipt("started"))).outcome).toBe("refreshed");
    expect((await store.bindReceipt(receipt("completed"))).outcome).toBe("refreshed");
    expect((await store.bindReceipt(receipt("delivered"))).outcome).toBe("stale");
    expect((await store.bindReceipt(receipt("started"))).outcome).toBe("stale");
    expect((await store.bindReceipt(receipt("unknown"))).outcome).toBe("stale");
    expect((await store.bindReceipt(receipt("completed"))).outcome).toBe("refreshed");
    const run = await runOf(t, DEVICE, runId);
    expect(run?.receiptState).toBe("completed");
    expect(run && runReceipt(run)).toMatchObject({ state: "completed", deliveryId: "delivery-a" });
    expect(run?.state).toBe("pending");
  });

  it("keeps the last receipt as it came, not a merge: what the newer receipt lacks is gone from the run", async () => {
    const started: Receipt = {
      ...receipt("started"),
      turnId: "turn-1",
      input: { mode: "steering", phase: "submitted" },
    };
    await store.bindReceipt(started);
    expect(await boundReceipt()).toEqual(started);

    const completed: Receipt = { ...receipt("completed"), at: started.at + 1 };
    expect((await store.bindReceipt(completed)).outcome).toBe("refreshed");
    expect(await boundReceipt()).toEqual(completed);
  });

  it("still refuses a receipt naming another delivery as a conflict, whatever its state", async () => {
    await store.bindReceipt(receipt("started"));
    const other: Receipt = { ...receiptFor(key, "delivery-other"), state: "completed" };
    expect((await store.bindReceipt(other)).outcome).toBe("conflict");
    expect((await runOf(t, DEVICE, runId))?.receiptState).toBe("started");
  });
});
