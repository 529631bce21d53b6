import { STREAM_CATALOG } from "../../libs/contract/catalog.js";
import { readFileSync } from "node:fs";
import Ajv2020 from "ajv/dist/2020.js";
import { describe, expect, it } from "vitest";
import { receiptSchema } from "../../libs/contract/receipt.js";

import { turnResultEventSchema } from "../../libs/contract/turn-result.js";
import { corpusAvailable, corpusPath } from "../helpers/corpus.js";
import {
  AGENT,
  HarnessPeer,
  eventHead,
  evidenceSettled,
  receiptOf,
  storeCounts,
  useHarnessStack,
  type ReceiptRef,
} from "./harness-fixture.js";

const s = useHarnessStack("producer", {
  RATE_LIMIT_BURST: "10000",
  RATE_LIMIT_PER_SECOND: "1000",
  MAX_IN_FLIGHT: "100",
});

/** A v2 peer of `deviceId` with `keys` sent and delivered to the engine. */
async function deviceWithInputs(deviceId: string, keys: string[]) {
  const peer = await HarnessPeer.connect(s.harness.url, deviceId);
  await peer.hello();
  const receipts: Record<string, ReceiptRef> = {};
  for (const key of keys) receipts[key] = receiptOf(await peer.send(key));
  for (const key of keys) await s.feed.delivered(deviceId, receipts[key] as ReceiptRef);
  return { peer, receipts: receipts as Record<string, ReceiptRef> };
}

async function states(peer: HarnessPeer, keys: string[]) {
  await evidenceSettled(s.t);
  const found: Record<string, unknown> = {};
  for (const key of keys) {
    const answer = await peer.receipt(key);
    const receipt = answer.receipt === null ? null : receiptSchema.parse(answer.receipt);
    found[key] =
      receipt === null ? null : receipt.error ? `${receipt.state}:${receipt.error.code}` : receipt.state;
  }
  return found;
}

const v2Schema = corpusAvailable
  ? new Ajv2020({ strict: false }).compile(
      JSON.parse(
        readFileSync(corpusPath("openharness", "turn-correlation-v2", "result.schema.json"), "utf8"),
      ),
    )
  : undefined;

describe("result-producer (openharness producer cases)", () => {
  it("group [A,B]: consumed A and B make one immutable group result while C stays delivered", async () => {
    const { peer, receipts } = await deviceWithInputs("lamp-group", ["A", "B", "C"]);
    await s.feed.consumed("lamp-group", receipts.A!);
    await s.feed.consumed("lamp-group", receipts.B!);
    await s.feed.completed(
      "turn-AB",
      [
        { deviceId: "lamp-group", receipt: receipts.A! },
        { deviceId: "lamp-group", receipt: receipts.B! },
      ],
      "Two red planes and two blue planes.",
      "completed",
      "engine-turn-1",
    );
    const [result] = await peer.waitForEvents("turn.result", 1);
    const event = turnResultEventSchema.parse(result);
    expect(event.payload.correlation).toEqual({
      scope: "group",
      inputs: [
        { deliveryId: receipts.A!.deliveryId, idempotencyKey: "A" },
        { deliveryId: receipts.B!.deliveryId, idempotencyKey: "B" },
      ],
      engineTurnId: "engine-turn-1",
    });
    expect(event).toMatchObject({
      agentId: AGENT,
      payload: { outcome: "completed", fullText: "Two red planes and two blue planes." },
    });
    if (v2Schema) expect(v2Schema(result), JSON.stringify(v2Schema.errors)).toBe(true);
    expect(await states(peer, ["A", "B", "C"])).toEqual({ A: "completed", B: "completed", C: "delivered" });
    await peer.waitForEvents("turn.done", 1);
    const started = peer
      .events("turn.started")
      .map((frame) => (frame.payload as { idempotencyKey: string }).idempotencyKey);
    expect(started).toEqual(["A", "B"]);
    const doneAfterResult =
      peer.frames.findIndex((f) => f.kind === "turn.done") >
      peer.frames.findIndex((f) => f.kind === "turn.result");
    expect(doneAfterResult).toBe(true);
    await peer.close();
  });

  it("re-ingesting the same evidence, a recap of completed inputs, or a bare turn end adds nothing", async () => {
    const { peer, receipts } = await deviceWithInputs("lamp-reingest", ["A"]);
    await s.feed.consumed("lamp-reingest", receipts.A!);
    await s.feed.completed("turn-A", [{ deviceId: "lamp-reingest", receipt: receipts.A! }], "Done A.");
    await peer.waitForEvents("turn.result", 1);
    await evidenceSettled(s.t);
    await peer.drained();
    const before = {
      counts: await storeCounts(s.t, "lamp-reingest"),
      frames: peer.frames.length,
      head: await eventHead(s.t, "lamp-reingest"),
    };
    await s.feed.consumed("lamp-reingest", receipts.A!);
    await s.feed.completed("turn-A", [{ deviceId: "lamp-reingest", receipt: receipts.A! }], "Done A.");
    await s.feed.completed(
      "recap-A",
      [{ deviceId: "lamp-reingest", receipt: receipts.A! }],
      "Earlier I did A.",
    );
    // A turn end with no proven member is not valid evidence at all: it is dead-lettered, never applied.
    await s.t.redis.xadd(
      s.t.keys.stream(STREAM_CATALOG.harnessEvidence.name),
      "*",
      "payload",
      JSON.stringify({
        kind: "turn.completed",
        ...s.feed.base("bare-end"),
        outcome: "completed",
        fullText: "bye",
        members: [],
      }),
    );
    await evidenceSettled(s.t);
    // The producer has applied everything: with no new event on the log, nothing can reach the peer.
    expect(await eventHead(s.t, "lamp-reingest")).toBe(before.head);
    expect(await storeCounts(s.t, "lamp-reingest")).toEqual(before.counts);
    expect(peer.frames.length).toBe(before.frames);
    expect(await states(peer, ["A"])).toEqual({ A: "completed" });
    await peer.close();
  });

  it("a queued B is not completed by A's result; B later gets its own result", async () => {
    const { peer, receipts } = await deviceWithInputs("lamp-queue", ["A", "B"]);
    await s.feed.consumed("lamp-queue", receipts.A!);
    await s.feed.completed("turn-A", [{ deviceId: "lamp-queue", receipt: receipts.A! }], "A only.");
    await peer.waitForEvents("turn.result", 1);
    expect(await states(peer, ["A", "B"])).toEqual({ A: "completed", B: "delivered" });
    await s.feed.consumed("lamp-queue", receipts.B!);
    await s.feed.completed("turn-B", [{ deviceId: "lamp-queue", receipt: receipts.B! }], "B later.");
    const results = await peer.waitForEvents("turn.result", 2);
    expect(
      results.map((frame) =>
        turnResultEventSchema.parse(frame).payload.correlation.inputs.map((m) => m.idempotencyKey),
      ),
    ).toEqual([["A"], ["B"]]);
    expect(await states(peer, ["A", "B"])).toEqual({ A: "completed", B: "completed" });
    await peer.close();
  });

  it("enqueue alone never completes: delivered and started inputs stay so without a boundary", async () => {
    const { peer, receipts } = await deviceWithInputs("lamp-enqueue", ["A", "B"]);
    await s.feed.consumed("lamp-enqueue", receipts.A!);
    expect(await states(peer, ["A", "B"])).toEqual({ A: "started", B: "delivered" });
    const started = receiptSchema.parse((await peer.receipt("A")).receipt);
    expect(started.input).toEqual({ mode: "direct", phase: "accepted" });
    expect(started.turnId).toEqual(expect.any(String));
    expect(receiptSchema.parse((await peer.receipt("B")).receipt).input).toEqual({
      mode: "direct",
      phase: "submitted",
    });
    expect(peer.events("turn.result")).toEqual([]);
    await peer.close();
  });

  it("missing evidence or a session gone ends receipts unknown with the reason and fabricates no result", async () => {
    const { peer, receipts } = await deviceWithInputs("lamp-missing", ["A", "B"]);
    await s.feed.consumed("lamp-missing", receipts.B!);
    await s.feed.emit({
      kind: "evidence.missing",
      ...s.feed.base("missing-A"),
      members: [{ deviceId: "lamp-missing", ...receipts.A! }],
      reason: "RESULT_EVIDENCE_MISSING",
    });
    await s.feed.emit({
      kind: "evidence.missing",
      ...s.feed.base("exit-B"),
      members: [{ deviceId: "lamp-missing", ...receipts.B! }],
      reason: "ENGINE_EXITED",
    });
    expect(await states(peer, ["A", "B"])).toEqual({
      A: "unknown:RESULT_EVIDENCE_MISSING",
      B: "unknown:ENGINE_EXITED",
    });
    expect((await storeCounts(s.t, "lamp-missing")).results).toBe(0);
    await peer.drained();
    expect(peer.events("turn.result")).toEqual([]);
    expect(
      peer
        .events("receipt.updated")
        .map((frame) => (frame.payload as { receipt: { state: string } }).receipt.state),
    ).toContain("unknown");
    await peer.close();
  });

  it("other owner: a member whose deliveryId is not this device's reservation fails closed and changes nothing", async () => {
    const mine = await deviceWithInputs("lamp-owner", ["A"]);
    const theirs = await deviceWithInputs("lamp-thief", ["A"]);
    await s.feed.consumed("lamp-owner", mine.receipts.A!);
    await s.feed.completed(
      "turn-steal",
      [{ deviceId: "lamp-thief", receipt: { idempotencyKey: "A", deliveryId: mine.receipts.A!.deliveryId } }],
      "stolen",
    );
    await s.feed.completed("turn-ghost", [{ deviceId: "lamp-ghost", receipt: mine.receipts.A! }], "ghost");
    expect(await states(mine.peer, ["A"])).toEqual({ A: "started" });
    expect(await states(theirs.peer, ["A"])).toEqual({ A: "delivered" });
    expect((await storeCounts(s.t, "lamp-thief")).results).toBe(0);
    expect((await storeCounts(s.t, "lamp-ghost")).results).toBe(0);
    await mine.peer.close();
    await theirs.peer.close();
  });

  it("mixed owners: a group spanning two devices is withheld whole and its receipts end unknown", async () => {
    const one = await deviceWithInputs("lamp-mix-1", ["A"]);
    const two = await deviceWithInputs("lamp-mix-2", ["B"]);
    await s.feed.completed(
      "turn-mixed",
      [
        { deviceId: "lamp-mix-1", receipt: one.receipts.A! },
        { deviceId: "lamp-mix-2", receipt: two.receipts.B! },
      ],
      "shared",
    );
    expect(await states(one.peer, ["A"])).toEqual({ A: "unknown:RESULT_OWNER_MIXED" });
    expect(await states(two.peer, ["B"])).toEqual({ B: "unknown:RESULT_OWNER_MIXED" });
    expect(
      (await storeCounts(s.t, "lamp-mix-1")).results + (await storeCounts(s.t, "lamp-mix-2")).results,
    ).toBe(0);
    await one.peer.close();
    await two.peer.close();
  });

  it("failed and cancelled results are published but leave receipts unchanged", async () => {
    const { peer, receipts } = await deviceWithInputs("lamp-failed", ["A", "B"]);
    await s.feed.consumed("lamp-failed", receipts.A!);
    await s.feed.consumed("lamp-failed", receipts.B!);
    await s.feed.completed(
      "turn-fail",
      [{ deviceId: "lamp-failed", receipt: receipts.A! }],
      "It broke.",
      "failed",
    );
    await s.feed.completed(
      "turn-cancel",
      [{ deviceId: "lamp-failed", receipt: receipts.B! }],
      "Stopped.",
      "cancelled",
    );
    const results = await peer.waitForEvents("turn.result", 2);
    expect(results.map((frame) => turnResultEventSchema.parse(frame).payload.outcome)).toEqual([
      "failed",
      "cancelled",
    ]);
    expect(await states(peer, ["A", "B"])).toEqual({ A: "started", B: "started" });
    await peer.close();
  });

  it("a failed or cancelled turn that printed nothing is still published with a factual text, receipts unchanged", async () => {
    const { peer, receipts } = await deviceWithInputs("lamp-textless", ["A", "B"]);
    await s.feed.consumed("lamp-textless", receipts.A!);
    await s.feed.consumed("lamp-textless", receipts.B!);
    await s.feed.completed("turn-f", [{ deviceId: "lamp-textless", receipt: receipts.A! }], "", "failed");
    await s.feed.completed("turn-c", [{ deviceId: "lamp-textless", receipt: receipts.B! }], "", "cancelled");
    const results = await peer.waitForEvents("turn.result", 2);
    expect(results.map((frame) => turnResultEventSchema.parse(frame).payload)).toEqual([
      expect.objectContaining({
        outcome: "failed",
        fullText: "The engine reported a failure before giving an answer.",
      }),
      expect.objectContaining({
        outcome: "cancelled",
        fullText: "The turn was cancelled before an answer was given.",
      }),
    ]);
    expect(await states(peer, ["A", "B"])).toEqual({ A: "started", B: "started" });
    await peer.close();
  });

  it("a group identified by fingerprint on transcript structure is published; ordinal or synthetic members never make a group", async () => {
    const { peer, receipts } = await deviceWithInputs("lamp-proof", ["A", "B", "C", "D", "E", "F"]);
    const pair = (x: string, y: string) =>
      [x, y].map((key) => ({ deviceId: "lamp-proof", receipt: receipts[key]! }));
    await s.feed.completed("turn-fp", pair("A", "B"), "Both.", "completed", undefined, "fingerprint");
    await s.feed.completed("turn-ord", pair("C", "D"), "Guess.", "completed", undefined, "ordinal");
    await s.feed.completed("turn-syn", pair("E", "F"), "Made up.", "completed", undefined, "synthetic");
    const [group] = await peer.waitForEvents("turn.result", 1);
    expect(
      turnResultEventSchema.parse(group).payload.correlation.inputs.map((input) => input.idempotencyKey),
    ).toEqual([receipts.A!.idempotencyKey, receipts.B!.idempotencyKey]);
    expect(await states(peer, ["A", "B", "C", "D", "E", "F"])).toEqual({
      A: "completed",
      B: "completed",
      C: "unknown:RESULT_EVIDENCE_MISSING",
      D: "unknown:RESULT_EVIDENCE_MISSING",
      E: "unknown:RESULT_EVIDENCE_MISSING",
      F: "unknown:RESULT_EVIDENCE_MISSING",
    });
    expect((await storeCounts(s.t, "lamp-proof")).results).toBe(1);
    await peer.close();
  });

  it("bounds: over 64 members, a payload over 32 KiB, or a completed turn without text are withheld with unknown receipts", async () => {
    const keys = Array.from({ length: 65 }, (_, index) => `m${index}`);
    const { peer, receipts } = await deviceWithInputs("lamp-bounds", [...keys, "big", "empty"]);
    const members = keys.map((key) => ({ deviceId: "lamp-bounds", receipt: receipts[key]! }));
    await s.feed.completed("turn-65", members, "many");
    await s.feed.completed(
      "turn-big",
      [{ deviceId: "lamp-bounds", receipt: receipts.big! }],
      "x".repeat(33 * 1024),
    );
    await s.feed.completed("turn-empty", [{ deviceId: "lamp-bounds", receipt: receipts.empty! }], "");
    expect(await states(peer, ["m0", "m64", "big", "empty"])).toEqual({
      m0: "unknown:RESULT_TOO_LARGE",
      m64: "unknown:RESULT_TOO_LARGE",
      big: "unknown:RESULT_TOO_LARGE",
      empty: "unknown:RESULT_EMPTY",
    });
    expect((await storeCounts(s.t, "lamp-bounds")).results).toBe(0);
    await peer.close();
  });

  it("stop.confirmed completes the stop's own receipt, never the interrupted input's; input.rejected rejects", async () => {
    const { peer, receipts } = await deviceWithInputs("lamp-stopper", ["A", "R"]);
    await s.feed.consumed("lamp-stopper", receipts.A!);
    const stop = receiptOf(await peer.stop("S"));
    await s.feed.emit({
      kind: "stop.confirmed",
      ...s.feed.base("stop-S"),
      deviceId: "lamp-stopper",
      ...stop,
    });
    await s.feed.emit({
      kind: "input.rejected",
      ...s.feed.base("reject-R"),
      deviceId: "lamp-stopper",
      ...receipts.R!,
      reason: "no active turn",
    });
    expect(await states(peer, ["A", "S", "R"])).toEqual({
      A: "started",
      S: "completed",
      R: "rejected:INPUT_REJECTED",
    });
    await peer.close();
  });

  it("every receipt transition is a receipt.updated event on the owning device only", async () => {
    const { peer, receipts } = await deviceWithInputs("lamp-updates", ["A"]);
    const other = await HarnessPeer.connect(s.harness.url, "lamp-bystander");
    await other.hello();
    await s.feed.consumed("lamp-updates", receipts.A!);
    await s.feed.completed("turn-updates", [{ deviceId: "lamp-updates", receipt: receipts.A! }], "ok");
    const updates = await peer.waitForEvents("receipt.updated", 3);
    expect(updates.map((frame) => (frame.payload as { receipt: { state: string } }).receipt.state)).toEqual([
      "delivered",
      "started",
      "completed",
    ]);
    expect(
      updates.every((frame) => (frame.payload as { idempotencyKey: string }).idempotencyKey === "A"),
    ).toBe(true);
    await other.drained();
    expect(other.events()).toEqual([]);
    const ids = peer.events().map((frame) => frame.eventId as number);
    expect(ids).toEqual([...ids].sort((a, b) => a - b));
    await peer.close();
    await other.close();
  });
});
