import { STREAM_CATALOG } from "../../libs/contract/catalog.js";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { helloResultSchema } from "../../libs/contract/harness-wire.js";

import { freePort } from "../../libs/redis/redis-server-process.js";
import { ReservationStore } from "../../services/harness-gateway/reservations/reservation-store.js";
import { TsProcess } from "../helpers/child-process.js";
import { createTestRedis, waitFor, type TestRedis } from "../helpers/test-redis.js";
import {
  AGENT,
  EvidenceFeed,
  HarnessPeer,
  MACHINE,
  evidenceSettled,
  harnessEnv,
  receiptOf,
  startHarness,
  storeCounts,
} from "./harness-fixture.js";

let t: TestRedis;
beforeAll(() => {
  t = createTestRedis("restart");
});
afterAll(async () => t.cleanup());

const dispatchLength = () => t.redis.xlen(t.keys.stream(STREAM_CATALOG.harnessDispatch.name));

describe("restart of the gateway and producer processes", () => {
  it("keeps receipts exact, does not resend, continues in-flight evidence and replays identical results", async () => {
    const port = await freePort();
    const env = harnessEnv(t, { PORT: String(port), LOG_LEVEL: "info" });
    const gateway = new TsProcess("services/harness-gateway/main.ts", env);
    const producer = new TsProcess("services/result-producer/main.ts", {
      ...env,
      PORT: String(await freePort()),
    });
    const url = `http://127.0.0.1:${port}`;
    try {
      await Promise.all([
        gateway.waitForOutput("services started"),
        producer.waitForOutput("services started"),
      ]);
      const feed = new EvidenceFeed(t);
      const peer = await HarnessPeer.connect(url, "lamp-restart");
      const hello = helloResultSchema.parse(await peer.hello());
      const a = receiptOf(await peer.send("A"));
      const b = receiptOf(await peer.send("B"));
      await feed.consumed("lamp-restart", a);
      await feed.completed("turn-A", [{ deviceId: "lamp-restart", receipt: a }], "A is done.");
      await feed.delivered("lamp-restart", b);
      await peer.waitForEvents("turn.result", 1);
      await evidenceSettled(t);
      const before = { A: (await peer.receipt("A")).receipt, B: (await peer.receipt("B")).receipt };
      const cursor = Math.max(...peer.events().map((frame) => frame.eventId as number));
      const dispatchedBefore = await dispatchLength();
      await peer.close();

      await Promise.all([gateway.kill("SIGKILL"), producer.kill("SIGKILL")]);
      await feed.consumed("lamp-restart", b);
      await feed.completed("turn-B", [{ deviceId: "lamp-restart", receipt: b }], "B is done.");
      await Promise.all([gateway.restart(), producer.restart()]);
      await waitFor(
        () => gateway.log.split("services started").length,
        (count) => count >= 3,
        { timeoutMs: 20_000 },
      );

      const resumed = await HarnessPeer.connect(url, "lamp-restart");
      const again = helloResultSchema.parse(
        await resumed.hello(undefined, { serverInstanceId: hello.serverInstanceId, cursor }),
      );
      expect(again).toMatchObject({ serverInstanceId: hello.serverInstanceId, resumed: true });
      const [resultB] = await resumed.waitForEvents("turn.result", 1, 15_000);
      expect(resultB!.payload).toMatchObject({
        fullText: "B is done.",
        correlation: { inputs: [{ idempotencyKey: "B" }] },
      });
      expect((await resumed.receipt("A")).receipt).toEqual(before.A);
      expect(await resumed.receipt("B")).toMatchObject({
        receipt: {
          ...before.B!,
          state: "completed",
          at: expect.any(Number),
          turnId: expect.any(String),
          input: { mode: "direct", phase: "accepted" },
        },
      });
      expect(await resumed.send("A")).toMatchObject({ status: "duplicate", receipt: before.A });
      expect(await dispatchLength()).toBe(dispatchedBefore);

      const fresh = await HarnessPeer.connect(url, "lamp-restart");
      await fresh.hello();
      await fresh.waitForEvents("turn.result", 2);
      const original = peer.resultPayloadBytes();
      expect(fresh.resultPayloadBytes()).toEqual([...original, ...resumed.resultPayloadBytes()]);
      await resumed.close();
      await fresh.close();
    } finally {
      await Promise.all([gateway.kill("SIGKILL"), producer.kill("SIGKILL")]);
    }
  }, 60_000);

  it("a reservation left undispatched by a crash is dispatched by the sweep at restart, once", async () => {
    const store = new ReservationStore(t.redis, t.keys, { capacity: 10, retentionMs: 60_000 });
    const request = {
      type: "turn.send" as const,
      requestId: crypto.randomUUID(),
      machineId: MACHINE,
      agentId: AGENT,
      idempotencyKey: "crashed",
      text: "hello",
    };
    const reserved = await store.reserve("lamp-sweep", request, "instance", Math.floor(Date.now() / 1000));
    expect(reserved.status).toBe("accepted");
    const before = await dispatchLength();
    const harness = await startHarness(t, { DISPATCH_SWEEP_MIN_AGE_MS: "0" });
    try {
      expect(await dispatchLength()).toBe(before + 1);
      const [latest] = (await t.redis.xrevrange(
        t.keys.stream(STREAM_CATALOG.harnessDispatch.name),
        "+",
        "-",
        "COUNT",
        1,
      )) as [string, string[]][];
      expect(JSON.parse(latest![1][1]!)).toMatchObject({
        kind: "input",
        deviceId: "lamp-sweep",
        idempotencyKey: "crashed",
      });
      const peer = await HarnessPeer.connect(harness.url, "lamp-sweep");
      await peer.hello();
      expect(await peer.send("crashed", "hello")).toMatchObject({ status: "duplicate" });
      expect(await dispatchLength()).toBe(before + 1);
      expect((await storeCounts(t, "lamp-sweep")).reservations).toBe(1);
      await peer.close();
    } finally {
      await harness.stop();
    }
  });
});
