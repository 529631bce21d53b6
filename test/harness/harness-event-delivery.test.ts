import { readFileSync } from "node:fs";
import Ajv2020 from "ajv/dist/2020.js";
import { describe, expect, it } from "vitest";
import { helloResultSchema, resyncSchema } from "../../libs/contract/harness-wire.js";
import {
  correlatedSummaryEventSchema,
  correlatedSummaryPayloadSchema,
  turnResultEventSchema,
} from "../../libs/contract/turn-result.js";
import { instanceKey } from "../../libs/harness-store/harness-keys.js";
import { corpusAvailable, corpusPath, corpusSkipReason } from "../helpers/corpus.js";
import { deleteByPrefix, waitFor } from "../helpers/test-redis.js";
import {
  HarnessPeer,
  evidenceSettled,
  receiptOf,
  useHarnessStack,
  type HarnessStack,
  type ReceiptRef,
} from "./harness-fixture.js";

const fixture = (set: string, file: string) =>
  JSON.parse(readFileSync(corpusPath("openharness", set, file), "utf8")) as Record<string, unknown>;
const peerSchema = (set: string) =>
  new Ajv2020({ strict: false }).compile(fixture(set, "result.schema.json"));

const stack = (label: string, env: Record<string, string> = {}) =>
  useHarnessStack(label, { RATE_LIMIT_BURST: "1000", RATE_LIMIT_PER_SECOND: "1000", ...env });

/** Sends keys from `peer`, and proves a result over them (group when several) plus one single result for `single`. */
async function produceResults(
  s: HarnessStack,
  peer: HarnessPeer,
  deviceId: string,
  group: string[],
  single?: string,
) {
  const receipts: Record<string, ReceiptRef> = {};
  for (const key of [...group, ...(single ? [single] : [])]) receipts[key] = receiptOf(await peer.send(key));
  for (const key of Object.keys(receipts)) await s.feed.consumed(deviceId, receipts[key]!);
  await s.feed.completed(
    `turn-${deviceId}-${group.join("")}`,
    group.map((key) => ({ deviceId, receipt: receipts[key]! })),
    `Finished ${group.join(" and ")}.`,
  );
  if (single)
    await s.feed.completed(
      `turn-${deviceId}-${single}`,
      [{ deviceId, receipt: receipts[single]! }],
      `${single} completed separately.`,
    );
  await evidenceSettled(s.t);
  return receipts;
}

describe("capability gating and partitioning (v2, default plain legacy profile)", () => {
  const s = stack("gating");

  it("turn.result counts: legacy 0 / capable 1 / downgraded 0 / other device 0", async () => {
    const legacy = await HarnessPeer.connect(s.harness.url, "lamp-1");
    const capable = await HarnessPeer.connect(s.harness.url, "lamp-1");
    const downgraded = await HarnessPeer.connect(s.harness.url, "lamp-1");
    const otherDevice = await HarnessPeer.connect(s.harness.url, "lamp-2");
    await legacy.hello([]);
    await capable.hello();
    expect(helloResultSchema.parse(await downgraded.hello()).capabilities).toEqual(["turn.correlation.v2"]);
    expect(helloResultSchema.parse(await downgraded.hello([])).capabilities).toEqual([]);
    await otherDevice.hello();
    await produceResults(s, capable, "lamp-1", ["A", "B"]);
    await capable.waitForEvents("turn.result", 1);
    await Promise.all([legacy, capable, downgraded, otherDevice].map((peer) => peer.drained()));
    const counts = [legacy, capable, downgraded, otherDevice].map(
      (peer) => peer.events("turn.result").length,
    );
    expect(counts).toEqual([0, 1, 0, 0]);
    // The plain legacy profile never carries a group, and the other device sees nothing of lamp-1 at all.
    expect(legacy.events("turn.summary")).toEqual([]);
    expect(otherDevice.events()).toEqual([]);
    for (const peer of [legacy, capable, downgraded, otherDevice]) await peer.close();
  });

  it("a plain legacy peer gets a proven single-input result as a plain summary, once, and no group", async () => {
    const v2 = await HarnessPeer.connect(s.harness.url, "lamp-plain");
    const legacy = await HarnessPeer.connect(s.harness.url, "lamp-plain");
    await v2.hello();
    await legacy.hello([]);
    await produceResults(s, v2, "lamp-plain", ["G1", "G2"], "C");
    const [summary] = await legacy.waitForEvents("turn.summary", 1);
    await Promise.all([v2.drained(), legacy.drained()]);
    expect(legacy.events("turn.summary")).toHaveLength(1);
    expect(legacy.events("turn.result")).toHaveLength(0);
    expect(Object.keys(summary!.payload as object).sort()).toEqual([
      "fullText",
      "idempotencyKey",
      "kind",
      "text",
      "turnId",
    ]);
    expect(summary!.payload).toMatchObject({
      kind: "summary",
      text: "C completed separately.",
      fullText: "C completed separately.",
      idempotencyKey: "C",
      turnId: expect.any(String),
    });
    expect(v2.events("turn.result")).toHaveLength(2);
    expect(v2.events("turn.summary")).toHaveLength(0);
    await v2.close();
    await legacy.close();
  });

  it("a resync replays only the device's own retained results", async () => {
    const late = await HarnessPeer.connect(s.harness.url, "lamp-2");
    await late.hello();
    await late.drained();
    expect(late.events("turn.result")).toEqual([]);
    const owner = await HarnessPeer.connect(s.harness.url, "lamp-1");
    await owner.hello();
    const replayed = await owner.waitForEvents("turn.result", 1);
    expect(replayed.map((frame) => turnResultEventSchema.parse(frame).payload.correlation.scope)).toEqual([
      "group",
    ]);
    await late.close();
    await owner.close();
  });
});

describe("resume, resync and instance change", () => {
  const s = stack("resume");

  it("first connect gets a resync; a valid cursor replays exactly the retained events after it", async () => {
    const peer = await HarnessPeer.connect(s.harness.url, "lamp-r");
    const hello = helloResultSchema.parse(await peer.hello());
    expect(hello.resumed).toBe(false);
    await waitFor(
      () => peer.frames.length,
      (count) => count >= 2,
    );
    expect(resyncSchema.parse(peer.frames[1])).toEqual({
      type: "resync",
      reason: "instance_changed",
      serverInstanceId: hello.serverInstanceId,
      cursor: 0,
    });
    await produceResults(s, peer, "lamp-r", ["A"]);
    await peer.waitForEvents("turn.done", 1);
    const events = peer.events();
    const cut = events[1]!.eventId as number;
    await peer.close();

    const again = await HarnessPeer.connect(s.harness.url, "lamp-r");
    const resumed = helloResultSchema.parse(
      await again.hello(undefined, { serverInstanceId: hello.serverInstanceId, cursor: cut }),
    );
    expect(resumed.resumed).toBe(true);
    await again.waitForEvents("turn.done", 1);
    expect(again.frames.filter((frame) => frame.type === "resync")).toEqual([]);
    expect(again.raw.filter((text) => text.startsWith('{"type":"event"'))).toEqual(
      peer.raw.filter(
        (text) =>
          text.startsWith('{"type":"event"') && (JSON.parse(text) as { eventId: number }).eventId > cut,
      ),
    );
    await again.close();
  });

  it("a cursor ahead of the log is cursor_too_old; then the results come with fresh eventIds and the same bytes", async () => {
    const first = await HarnessPeer.connect(s.harness.url, "lamp-r");
    const hello = helloResultSchema.parse(await first.hello());
    const [original] = await first.waitForEvents("turn.result", 1);
    await first.close();
    const peer = await HarnessPeer.connect(s.harness.url, "lamp-r");
    await peer.hello(undefined, { serverInstanceId: hello.serverInstanceId, cursor: hello.cursor + 1000 });
    const [replayed] = await peer.waitForEvents("turn.result", 1);
    const resync = resyncSchema.parse(peer.frames.find((frame) => frame.type === "resync"));
    expect(resync.reason).toBe("cursor_too_old");
    expect(replayed!.eventId).toBe(resync.cursor + 1);
    expect(replayed!.eventId).not.toBe(original!.eventId);
    expect(peer.resultPayloadBytes()).toEqual(first.resultPayloadBytes());
    await peer.close();
  });

  it("instance change: resync, then the identical payload under the new top-level instance", async () => {
    const before = await HarnessPeer.connect(s.harness.url, "lamp-r");
    const oldHello = helloResultSchema.parse(await before.hello());
    await before.waitForEvents("turn.result", 1);
    await before.close();
    await s.t.redis.del(instanceKey(s.t.keys));

    const peer = await HarnessPeer.connect(s.harness.url, "lamp-r");
    const hello = helloResultSchema.parse(
      await peer.hello(undefined, { serverInstanceId: oldHello.serverInstanceId, cursor: oldHello.cursor }),
    );
    expect(hello.serverInstanceId).not.toBe(oldHello.serverInstanceId);
    expect(hello.resumed).toBe(false);
    const [result] = await peer.waitForEvents("turn.result", 1);
    expect(peer.frames.find((frame) => frame.type === "resync")).toMatchObject({
      reason: "instance_changed",
      serverInstanceId: hello.serverInstanceId,
    });
    const event = turnResultEventSchema.parse(result);
    expect(event.serverInstanceId).toBe(hello.serverInstanceId);
    expect(event.payload.serverInstanceId).toBe(oldHello.serverInstanceId);
    expect(peer.resultPayloadBytes()).toEqual(before.resultPayloadBytes());
    await peer.close();
  });

  it("losing the Redis data is an instance change reconciled by receipt.get, never a resubmission", async () => {
    const before = await HarnessPeer.connect(s.harness.url, "lamp-r");
    const oldHello = helloResultSchema.parse(await before.hello());
    await before.close();
    await deleteByPrefix(s.t.redis, s.t.keys.prefix);
    const peer = await HarnessPeer.connect(s.harness.url, "lamp-r");
    const hello = helloResultSchema.parse(
      await peer.hello(undefined, { serverInstanceId: oldHello.serverInstanceId, cursor: oldHello.cursor }),
    );
    expect(hello).toMatchObject({ resumed: false, cursor: 0 });
    expect(hello.serverInstanceId).not.toBe(oldHello.serverInstanceId);
    await peer.drained();
    expect(peer.frames.find((frame) => frame.type === "resync")).toMatchObject({
      reason: "instance_changed",
      cursor: 0,
    });
    expect(peer.events()).toEqual([]);
    expect(await peer.receipt("A")).toMatchObject({ receipt: null });
    await peer.close();
  });
});

describe.skipIf(!corpusAvailable)(
  `openharness fixtures (${corpusAvailable ? "corpus" : corpusSkipReason})`,
  () => {
    const s = stack("fixtures", { LEGACY_SUMMARY_PROFILE: "correlated" });

    it("both fixture sets' group and input results validate against our contract schemas", () => {
      for (const file of ["group-result.json", "input-result.json"]) {
        expect(turnResultEventSchema.safeParse(fixture("turn-correlation-v2", file)).success).toBe(true);
        expect(correlatedSummaryEventSchema.safeParse(fixture("summary-correlation", file)).success).toBe(
          true,
        );
      }
    });

    it("what we emit has the fixtures' shape and passes the peer's own JSON schemas (v2 and correlated summary)", async () => {
      const v2 = await HarnessPeer.connect(s.harness.url, "lamp-f");
      const summary = await HarnessPeer.connect(s.harness.url, "lamp-f");
      await v2.hello();
      await summary.hello([]);
      await produceResults(s, v2, "lamp-f", ["A", "B"], "C");
      const results = await v2.waitForEvents("turn.result", 2);
      const summaries = await summary.waitForEvents("turn.summary", 2);
      const v2Schema = peerSchema("turn-correlation-v2");
      const summarySchema = peerSchema("summary-correlation");
      const shape = (frame: Record<string, unknown>) => ({
        envelope: Object.keys(frame).sort(),
        payload: Object.keys(frame.payload as object).sort(),
        correlation: Object.keys((frame.payload as { correlation: object }).correlation).sort(),
      });
      for (const [index, file] of ["group-result.json", "input-result.json"].entries()) {
        const ours = results[index]!;
        expect(v2Schema(ours), JSON.stringify(v2Schema.errors)).toBe(true);
        expect(shape(ours)).toEqual(shape(fixture("turn-correlation-v2", file)));
        const oursSummary = summaries[index]!;
        expect(summarySchema(oursSummary), JSON.stringify(summarySchema.errors)).toBe(true);
        correlatedSummaryPayloadSchema.parse(oursSummary.payload);
        expect(shape(oursSummary)).toEqual(shape(fixture("summary-correlation", file)));
        // Same result, same identity in both forms: the summary adds legacy fields to the stored payload.
        expect(oursSummary.payload).toMatchObject(ours.payload as object);
      }
      expect((summaries[1]!.payload as { turnId: string }).turnId).toEqual(expect.any(String));
      await v2.close();
      await summary.close();
    });
  },
);
