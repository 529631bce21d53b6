import { STREAM_CATALOG } from "../../libs/contract/catalog.js";
import { afterEach, beforeEach, describe, expect, it } from "vitest";

import { OsDeviceKeys } from "../../libs/os-store/os-keys.js";
import { OsQueries } from "../../libs/os-store/os-queries.js";
import { hostServices, type HostedServices } from "../../libs/service/service-host.js";
import { routerService } from "../../services/router/definition.js";
import { runResolverService } from "../../services/run-resolver/definition.js";
import { createTestRedis, waitFor, type TestRedis } from "../helpers/test-redis.js";
import { ScriptedHarnessPeer } from "./harness-peer.js";
import {
  HARNESS_SECRET,
  osEnv,
  pushAndSettle,
  receiptFor,
  rejectionsOf,
  resultEvent,
  runOf,
  seedRun,
  statesOf,
  entriesAppended,
} from "./os-fixture.js";

const DEVICE = "lamp-validate";
let t: TestRedis;
let peer: ScriptedHarnessPeer;
let services: HostedServices;
let runs: Record<string, string>;

beforeEach(async () => {
  t = createTestRedis("validate");
  peer = await ScriptedHarnessPeer.start(HARNESS_SECRET);
  runs = {
    A: await seedRun(t, peer, DEVICE, { key: "key-A", deliveryId: "delivery-A" }),
    B: await seedRun(t, peer, DEVICE, { key: "key-B", deliveryId: "delivery-B" }),
  };
  services = await hostServices("test", [routerService, runResolverService], osEnv(t, peer));
  await peer.untilConnected(DEVICE);
});

afterEach(async () => {
  await services.stop();
  await peer.close();
  await t.cleanup();
});

const push = (frame: unknown) => pushAndSettle(t, peer, services.url, DEVICE, frame);

async function expectWholeEventRejected(reason: string) {
  expect((await rejectionsOf(t, DEVICE)).map((r) => r.reason)).toEqual([reason]);
  expect(await statesOf(t, DEVICE, runs)).toEqual({ A: "pending", B: "pending" });
  expect(await entriesAppended(t, STREAM_CATALOG.osRouted.name)).toBe(0);
  expect(await t.redis.exists(new OsDeviceKeys(t.keys, DEVICE).resultId("r-1"))).toBe(0);
}

describe("router: any mismatch or unresolved member rejects the whole event, nothing partially applied", () => {
  it("a member with the wrong idempotency key for its delivery", async () => {
    await push(
      resultEvent({
        resultId: "r-1",
        members: [
          ["delivery-A", "key-A"],
          ["delivery-B", "key-X"],
        ],
      }),
    );
    await expectWholeEventRejected("KEY_MISMATCH");
  });

  it("a member with the wrong deliveryId for its key", async () => {
    await push(
      resultEvent({
        resultId: "r-1",
        members: [
          ["delivery-A", "key-A"],
          ["delivery-X", "key-B"],
        ],
      }),
    );
    await expectWholeEventRejected("DELIVERY_MISMATCH");
  });

  it("a result from another agent than the runs were sent to", async () => {
    await push(resultEvent({ resultId: "r-1", agentId: "agent-other", members: [["delivery-A", "key-A"]] }));
    await expectWholeEventRejected("AGENT_MISMATCH");
  });

  it("a member owned by another device (never borrowed across owners)", async () => {
    await seedRun(t, peer, "lamp-someone-else", { key: "key-O", deliveryId: "delivery-O" });
    await push(
      resultEvent({
        resultId: "r-1",
        members: [
          ["delivery-A", "key-A"],
          ["delivery-O", "key-O"],
        ],
      }),
    );
    await expectWholeEventRejected("UNKNOWN_MEMBER");
  });

  it("a result whose originating instance differs from the runs' receipts", async () => {
    await push(
      resultEvent({
        resultId: "r-1",
        serverInstanceId: "other-instance",
        members: [["delivery-A", "key-A"]],
      }),
    );
    await expectWholeEventRejected("INSTANCE_MISMATCH");
  });

  it("an unresolved member (no run has that key) and no fallback to the agent's latest run", async () => {
    await push(
      resultEvent({
        resultId: "r-1",
        members: [
          ["delivery-A", "key-A"],
          ["delivery-Z", "key-Z"],
        ],
      }),
    );
    await expectWholeEventRejected("UNKNOWN_MEMBER");
  });

  it("a group with a duplicate member", async () => {
    await push(
      resultEvent({
        resultId: "r-1",
        members: [
          ["delivery-A", "key-A"],
          ["delivery-A", "key-A"],
        ],
      }),
    );
    await expectWholeEventRejected("DUPLICATE_MEMBER");
  });

  it("a result listing a run that another result already resolved", async () => {
    await push(resultEvent({ resultId: "r-0", members: [["delivery-A", "key-A"]] }));
    await push(
      resultEvent({
        resultId: "r-1",
        members: [
          ["delivery-A", "key-A"],
          ["delivery-B", "key-B"],
        ],
      }),
    );
    expect((await rejectionsOf(t, DEVICE)).map((r) => r.reason)).toEqual(["MEMBER_NOT_PENDING"]);
    expect(await statesOf(t, DEVICE, runs)).toEqual({ A: "resolved", B: "pending" });
  });

  it("the same rejected event replayed is recorded and counted once", async () => {
    const event = resultEvent({ resultId: "r-1", members: [["delivery-Z", "key-Z"]] });
    await push(event);
    await push({ ...event, eventId: event.eventId + 50 });
    expect(await rejectionsOf(t, DEVICE)).toHaveLength(1);
    const metrics = await (await fetch(`${services.url}/metrics`)).text();
    expect(metrics).toMatch(/^os_rejected_events_total\{reason="UNKNOWN_MEMBER",service="router"\} 1$/m);
  });
});

describe("router claims (device, serverInstanceId, resultId) with the content hash; the run-resolver dedupes on it", () => {
  it("changed text under the same resultId is a protocol error and changes nothing", async () => {
    await push(resultEvent({ resultId: "r-1", members: [["delivery-A", "key-A"]], fullText: "first" }));
    const stored = await t.redis.hgetall(new OsDeviceKeys(t.keys, DEVICE).result("originating-instance|r-1"));
    await push(resultEvent({ resultId: "r-1", members: [["delivery-A", "key-A"]], fullText: "changed" }));
    const errors = await t.redis.xrange(new OsDeviceKeys(t.keys, DEVICE).protocolErrors, "-", "+");
    expect(errors).toHaveLength(1);
    expect(JSON.parse(errors[0]?.[1][1] ?? "{}")).toMatchObject({
      code: "RESULT_CONTENT_CHANGED",
      resultId: "r-1",
    });
    expect(
      await t.redis.hgetall(new OsDeviceKeys(t.keys, DEVICE).result("originating-instance|r-1")),
    ).toEqual(stored);
    expect(await entriesAppended(t, STREAM_CATALOG.osResolved.name)).toBe(1);
    const metrics = await (await fetch(`${services.url}/metrics`)).text();
    expect(metrics).toMatch(
      /^os_protocol_errors_total\{code="RESULT_CONTENT_CHANGED",service="router"\} 1$/m,
    );
  });

  it("changed membership under the same resultId is a protocol error; the unlisted run stays pending", async () => {
    await push(resultEvent({ resultId: "r-1", members: [["delivery-A", "key-A"]], fullText: "same" }));
    await push(
      resultEvent({
        resultId: "r-1",
        members: [
          ["delivery-A", "key-A"],
          ["delivery-B", "key-B"],
        ],
        fullText: "same",
      }),
    );
    expect(await t.redis.xlen(new OsDeviceKeys(t.keys, DEVICE).protocolErrors)).toBe(1);
    expect(await statesOf(t, DEVICE, runs)).toEqual({ A: "resolved", B: "pending" });
  });

  it("a group result is stored once and referenced by each member run", async () => {
    await push(
      resultEvent({
        resultId: "r-g",
        members: [
          ["delivery-A", "key-A"],
          ["delivery-B", "key-B"],
        ],
      }),
    );
    const a = await runOf(t, DEVICE, runs.A ?? "");
    const b = await runOf(t, DEVICE, runs.B ?? "");
    expect(a).toMatchObject({
      state: "resolved",
      outcome: "completed",
      resultKey: "originating-instance|r-g",
    });
    expect(b?.resultKey).toBe(a?.resultKey);
    expect(await t.redis.keys(new OsDeviceKeys(t.keys, DEVICE).result("*"))).toHaveLength(1);
  });
});

describe("router: reordered delivery", () => {
  it("a result that arrives before its receipt waits and applies once the receipt binds", async () => {
    // The send's answer is lost, so the run's receipt is not bound when its result arrives.
    peer.dropSendAnswers = 1_000;
    runs.C = await seedRun(t, peer, DEVICE, { key: "key-C" });
    await waitFor(
      () => peer.framesOf(DEVICE, "turn.send").length,
      (n) => n >= 1,
    );
    const held = resultEvent({ resultId: "r-c", members: [["delivery-key-C", "key-C"]] });
    await push(held);
    await push({ ...held, eventId: held.eventId + 500 }); // replayed (after a resync): the first entry stays
    expect(await statesOf(t, DEVICE, { C: runs.C })).toEqual({ C: "pending" });
    const queries = new OsQueries(t.redis, t.keys);
    expect(await queries.heldResults(DEVICE)).toEqual([
      {
        id: expect.any(String),
        kind: "turn.result",
        agentId: "agent-fixture",
        transportInstanceId: "transport-instance",
        eventId: held.eventId,
        resultId: "r-c",
        serverInstanceId: "originating-instance",
        idempotencyKeys: ["key-C"],
        heldAt: expect.stringMatching(/^\d{4}-\d\d-\d\dT/),
      },
    ]);
    await push({
      type: "event",
      kind: "receipt.updated",
      eventId: 900,
      serverInstanceId: "transport-instance",
      machineId: "machine-fixture",
      agentId: "agent-fixture",
      payload: { idempotencyKey: "key-C", receipt: receiptFor("key-C", "delivery-key-C") },
    });
    await waitFor(
      () => statesOf(t, DEVICE, { C: runs.C ?? "" }),
      (s) => s.C === "resolved",
    );
    expect(await statesOf(t, DEVICE, runs)).toEqual({ A: "pending", B: "pending", C: "resolved" });
    expect(await queries.heldResults(DEVICE)).toEqual([]);
    expect(await entriesAppended(t, STREAM_CATALOG.osResolved.name)).toBe(1);
  });

  it("lifecycle events never resolve a run", async () => {
    for (const kind of ["turn.started", "turn.done"])
      await push({
        type: "event",
        kind,
        eventId: kind === "turn.done" ? 801 : 800,
        serverInstanceId: "transport-instance",
        machineId: "machine-fixture",
        agentId: "agent-fixture",
        payload: { idempotencyKey: "key-A", text: "done" },
      });
    expect(await statesOf(t, DEVICE, runs)).toEqual({ A: "pending", B: "pending" });
    expect(await entriesAppended(t, STREAM_CATALOG.osRouted.name)).toBe(0);
  });
});

describe("router: legacy turn.summary without correlation", () => {
  const summary = (payload: Record<string, unknown>, eventId = 700) => ({
    type: "event",
    kind: "turn.summary",
    eventId,
    serverInstanceId: "transport-instance",
    machineId: "machine-fixture",
    agentId: "agent-fixture",
    payload: { kind: "summary", text: "legacy answer", ...payload },
  });

  it("is never applied while the agent has overlapping pending inputs", async () => {
    await push(summary({ idempotencyKey: "key-A" }));
    expect((await rejectionsOf(t, DEVICE)).map((r) => r.reason)).toEqual(["LEGACY_SUMMARY_OVERLAP"]);
    expect(await statesOf(t, DEVICE, runs)).toEqual({ A: "pending", B: "pending" });
  });

  it("applies with one explicit key matching the single pending run, once, under a synthetic result id", async () => {
    await push(resultEvent({ resultId: "r-b", members: [["delivery-B", "key-B"]] }));
    await push(summary({ receipt: { idempotencyKey: "key-A" } }));
    await push(summary({ receipt: { idempotencyKey: "key-A" } }, 701));
    expect(await statesOf(t, DEVICE, runs)).toEqual({ A: "resolved", B: "resolved" });
    expect((await runOf(t, DEVICE, runs.A ?? ""))?.resultId).toBe("legacy-summary:delivery-A");
    expect(await entriesAppended(t, STREAM_CATALOG.osResolved.name)).toBe(2);
  });

  it("is rejected without a key, and when its keys disagree", async () => {
    await push(resultEvent({ resultId: "r-b", members: [["delivery-B", "key-B"]] }));
    await push(summary({}));
    await push(summary({ idempotencyKey: "key-A", receipt: { idempotencyKey: "key-B" } }, 702));
    expect((await rejectionsOf(t, DEVICE)).map((r) => r.reason)).toEqual([
      "LEGACY_SUMMARY_NO_KEY",
      "LEGACY_SUMMARY_KEY_CONFLICT",
    ]);
    expect(await statesOf(t, DEVICE, runs)).toEqual({ A: "pending", B: "resolved" });
  });

  it("a legacy summary never replaces a correlated result", async () => {
    await push(resultEvent({ resultId: "r-a", members: [["delivery-A", "key-A"]], fullText: "correlated" }));
    await push(resultEvent({ resultId: "r-b", members: [["delivery-B", "key-B"]] }));
    await push(summary({ idempotencyKey: "key-A", text: "recap" }));
    expect((await runOf(t, DEVICE, runs.A ?? ""))?.resultId).toBe("r-a");
    expect((await rejectionsOf(t, DEVICE)).map((r) => r.reason)).toEqual(["MEMBER_NOT_PENDING"]);
  });
});

describe("router: a store failure applies nothing and does not advance the cursor", () => {
  it("the frame that could not be staged is replayed after reconnect and then recorded once", async () => {
    const device = new OsDeviceKeys(t.keys, DEVICE);
    await push(resultEvent({ resultId: "r-a", members: [["delivery-A", "key-A"]] }));
    const cursorBefore = await t.redis.hgetall(device.cursor);
    await t.redis.set(device.rejections, "damaged"); // the next rejection cannot be written
    const rejected = resultEvent({ resultId: "r-z", members: [["delivery-Z", "key-Z"]] });
    peer.push(DEVICE, rejected);
    await waitFor(
      () => peer.framesOf(DEVICE, "hello").length,
      (n) => n === 2,
    );
    expect(await t.redis.hgetall(device.cursor)).toEqual(cursorBefore);
    expect(peer.framesOf(DEVICE, "hello")[1]).toMatchObject({
      resume: { serverInstanceId: "transport-instance", cursor: Number(cursorBefore.cursor) },
    });
    expect(await t.redis.smembers(`${device.base}:rejections-ids`)).toEqual([]);

    await t.redis.del(device.rejections);
    await peer.untilConnected(DEVICE);
    await push(rejected); // the Harness replays what followed the cursor
    expect((await rejectionsOf(t, DEVICE)).map((r) => r.reason)).toEqual(["UNKNOWN_MEMBER"]);
    expect(await t.redis.hget(device.cursor, "cursor")).toBe(String(rejected.eventId));
    expect(await statesOf(t, DEVICE, runs)).toEqual({ A: "resolved", B: "pending" });
  });
});
