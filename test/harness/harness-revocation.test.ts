import { describe, expect, it } from "vitest";
import { HarnessDeviceKeys } from "../../libs/harness-store/harness-keys.js";
import { TsProcess } from "../helpers/child-process.js";
import { waitFor } from "../helpers/test-redis.js";
import {
  HarnessPeer,
  evidenceSettled,
  receiptOf,
  storeCounts,
  tokenFor,
  useHarnessStack,
} from "./harness-fixture.js";

const s = useHarnessStack("revoke");

async function deviceWithResult(deviceId: string) {
  const peer = await HarnessPeer.connect(s.harness.url, deviceId);
  await peer.hello();
  const receipt = receiptOf(await peer.send("A"));
  await s.feed.consumed(deviceId, receipt);
  await s.feed.completed(`turn-${deviceId}`, [{ deviceId, receipt }], "done");
  await peer.waitForEvents("turn.result", 1);
  await evidenceSettled(s.t);
  return peer;
}

const revoke = async (deviceId: string, token: string) =>
  fetch(`${s.harness.url}/v1/admin/devices/${deviceId}`, {
    method: "DELETE",
    headers: { authorization: `Bearer ${token}` },
  });

describe("device revocation", () => {
  it("is operator-only: no token 401, a device token 403, and nothing is removed", async () => {
    await deviceWithResult("lamp-guarded");
    expect((await fetch(`${s.harness.url}/v1/admin/devices/lamp-guarded`, { method: "DELETE" })).status).toBe(
      401,
    );
    expect((await revoke("lamp-guarded", await tokenFor("lamp-guarded"))).status).toBe(403);
    expect(await storeCounts(s.t, "lamp-guarded")).toMatchObject({ reservations: 1, results: 1 });
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
    expect(await storeCounts(s.t, "lamp-revoked")).toMatchObject({ reservations: 0, results: 0 });
    const leftovers = await s.t.redis.keys(`${s.t.keys.harnessDevice("lamp-revoked")}:*`);
    expect(leftovers).toEqual([`${s.t.keys.harnessDevice("lamp-revoked")}:revoked-at`]);
    await expect(HarnessPeer.connectWithToken(s.harness.url, oldToken)).rejects.toThrow(/401/);
    expect(await storeCounts(s.t, "lamp-kept")).toMatchObject({ reservations: 1, results: 1 });
    expect(bystander.closed).toBeUndefined();

    // A token minted after the revocation (next second: iat has second resolution) starts from nothing.
    const revokedAt = Number(await s.t.redis.get(new HarnessDeviceKeys(s.t.keys, "lamp-revoked").revokedAt));
    await waitFor(
      () => Math.floor(Date.now() / 1000),
      (second) => second > Math.floor(revokedAt / 1000),
    );
    const fresh = await HarnessPeer.connect(s.harness.url, "lamp-revoked");
    await fresh.hello();
    await fresh.drained();
    expect(await fresh.receipt("A")).toMatchObject({ receipt: null });
    expect(fresh.events()).toEqual([]);
    await fresh.close();
    await bystander.close();
  });

  it("tools/revoke-device.ts does the same from the command line", async () => {
    const peer = await deviceWithResult("lamp-cli");
    const cli = new TsProcess("tools/revoke-device.ts", { REDIS_URL: s.t.url, KEY_PREFIX: s.t.keys.prefix }, [
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
    expect(await storeCounts(s.t, "lamp-cli")).toMatchObject({ reservations: 0, results: 0 });
  });
});
