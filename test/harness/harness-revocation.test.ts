import { afterAll, beforeAll, describe, expect, it } from "vitest";
import type { HostedServices } from "../../libs/service/service-host.js";
import { TsProcess } from "../helpers/child-process.js";
import { createTestRedis, waitFor, type TestRedis } from "../helpers/test-redis.js";
import {
  EvidenceFeed,
  HarnessPeer,
  evidenceSettled,
  receiptOf,
  startHarness,
  storeCounts,
  tokenFor,
} from "./harness-fixture.js";

let t: TestRedis;
let harness: HostedServices;
let feed: EvidenceFeed;

beforeAll(async () => {
  t = createTestRedis("revoke");
  harness = await startHarness(t);
  feed = new EvidenceFeed(t);
});
afterAll(async () => {
  await harness.stop();
  await t.cleanup();
});

async function deviceWithResult(deviceId: string) {
  const peer = await HarnessPeer.connect(harness.url, deviceId);
  await peer.hello();
  const receipt = receiptOf(await peer.send("A"));
  await feed.consumed(deviceId, receipt);
  await feed.completed(`turn-${deviceId}`, [{ deviceId, receipt }], "done");
  await peer.waitForEvents("turn.result", 1);
  await evidenceSettled(t);
  return peer;
}

const revoke = async (deviceId: string, token: string) =>
  fetch(`${harness.url}/v1/admin/devices/${deviceId}`, {
    method: "DELETE",
    headers: { authorization: `Bearer ${token}` },
  });

describe("device revocation", () => {
  it("is operator-only: no token 401, a device token 403, and nothing is removed", async () => {
    await deviceWithResult("lamp-guarded");
    expect((await fetch(`${harness.url}/v1/admin/devices/lamp-guarded`, { method: "DELETE" })).status).toBe(
      401,
    );
    expect((await revoke("lamp-guarded", await tokenFor("lamp-guarded"))).status).toBe(403);
    expect(await storeCounts(t, "lamp-guarded")).toMatchObject({ reservations: 1, results: 1 });
  });

  it("revoke removes everything: receipts, results, event log; sessions close; older tokens are REVOKED", async () => {
    const peer = await deviceWithResult("lamp-revoked");
    const bystander = await deviceWithResult("lamp-kept");
    const oldToken = await tokenFor("lamp-revoked");
    const response = await revoke("lamp-revoked", await tokenFor("ops", "operator"));
    expect(response.status).toBe(200);
    expect(await response.json()).toEqual({
      deviceId: "lamp-revoked",
      reservations: 1,
      results: 1,
      events: 5,
    });
    expect(
      await waitFor(
        () => peer.closed,
        (closed) => closed !== undefined,
      ),
    ).toEqual({ code: 4001, reason: "revoked" });
    expect(await storeCounts(t, "lamp-revoked")).toMatchObject({ reservations: 0, results: 0 });
    const leftovers = await t.redis.keys(`${t.keys.harnessDevice("lamp-revoked")}:*`);
    expect(leftovers).toEqual([`${t.keys.harnessDevice("lamp-revoked")}:revoked-at`]);
    await expect(HarnessPeer.connectWithToken(harness.url, oldToken)).rejects.toThrow(/401/);
    expect(await storeCounts(t, "lamp-kept")).toMatchObject({ reservations: 1, results: 1 });
    expect(bystander.closed).toBeUndefined();

    // A token minted after the revocation (next second: iat has second resolution) starts from nothing.
    await new Promise((resolve) => setTimeout(resolve, 1_100));
    const fresh = await HarnessPeer.connect(harness.url, "lamp-revoked");
    await fresh.hello();
    expect(await fresh.receipt("A")).toMatchObject({ receipt: null });
    expect(fresh.events()).toEqual([]);
    await fresh.close();
    await bystander.close();
  });

  it("tools/revoke-device.ts does the same from the command line", async () => {
    const peer = await deviceWithResult("lamp-cli");
    const cli = new TsProcess("tools/revoke-device.ts", { REDIS_URL: t.url, KEY_PREFIX: t.keys.prefix }, [
      "--device",
      "lamp-cli",
    ]);
    expect(await cli.kill("SIGCONT")).toBe(0);
    expect(JSON.parse(cli.log.trim().split("\n").at(-1)!)).toMatchObject({
      deviceId: "lamp-cli",
      harness: { deviceId: "lamp-cli", reservations: 1, results: 1 },
      os: { deviceId: "lamp-cli", revokedAt: expect.any(String) },
    });
    expect(
      await waitFor(
        () => peer.closed?.code,
        (code) => code !== undefined,
      ),
    ).toBe(4001);
    expect(await storeCounts(t, "lamp-cli")).toMatchObject({ reservations: 0, results: 0 });
  });
});
