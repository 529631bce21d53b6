import { randomUUID } from "node:crypto";
import fc from "fast-check";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { harnessErrorResultSchema } from "../../libs/contract/harness-wire.js";
import type { HostedServices } from "../../libs/service/service-host.js";
import {
  AGENT,
  EvidenceFeed,
  evidenceSettled,
  HarnessPeer,
  MACHINE,
  receiptOf,
  startHarness,
  tokenFor,
  wsUrl,
} from "../harness/harness-fixture.js";
import { createTestRedis, type TestRedis } from "../helpers/test-redis.js";
import { casesFor, SurfaceTally, timeoutFor } from "./hostile-budget.js";
import { hostileFrame, type Json, type WireFrame } from "./hostile-values.js";
import { snapshotChanges, snapshotKeys } from "./key-snapshot.js";
import { frameBytes, MAX_FRAME_BYTES, ProbedSocket } from "./probed-socket.js";

const DEVICE = "lamp-hostile";
const OTHER = "lamp-other";
const CASES = casesFor(400);
/** The result-producers' heartbeat in the registry of in-order readers of harness.evidence: it moves on its own clock. */
const VOLATILE = /:stream-readers:/;

let t: TestRedis;
let harness: HostedServices;
/** What the other device owns on the Harness: the hostile device must never see any of it. */
let other: { key: string; deliveryId: string; resultId: string; head: number; secrets: string[] };
let own: { resultIds: Set<string>; deliveryIds: Set<string>; keys: Set<string>; head: number };
let instance: string;

/** One device's input, proven consumed and completed by hand-written evidence, up to its turn.result event. */
async function completedInput(peer: HarnessPeer, deviceId: string, key: string, text: string) {
  const feed = new EvidenceFeed(t);
  const receipt = receiptOf(await peer.send(key, `${text} prompt`));
  await feed.delivered(deviceId, receipt);
  await feed.consumed(deviceId, receipt);
  await feed.completed(`done-${receipt.deliveryId}`, [{ deviceId, receipt }], `${text} answer`);
  await evidenceSettled(t);
  const [event] = await peer.waitForEvents("turn.result", 1);
  const payload = event?.payload as { resultId: string };
  return { deliveryId: receipt.deliveryId, resultId: payload.resultId, cursor: Number(event?.eventId) };
}

beforeAll(async () => {
  t = createTestRedis("hostile-harness");
  harness = await startHarness(t, {
    RATE_LIMIT_BURST: "1000000",
    RATE_LIMIT_PER_SECOND: "1000000",
    MAX_IN_FLIGHT: "64",
  });
  const otherPeer = await HarnessPeer.connect(harness.url, OTHER);
  const hello = await otherPeer.hello();
  instance = String(hello.serverInstanceId);
  const done = await completedInput(otherPeer, OTHER, "shared-key", "SECRET-OTHER");
  await otherPeer.close();
  other = {
    key: "shared-key",
    deliveryId: done.deliveryId,
    resultId: done.resultId,
    head: done.cursor,
    secrets: [done.deliveryId, done.resultId, "SECRET-OTHER"],
  };
  const ownPeer = await HarnessPeer.connect(harness.url, DEVICE);
  await ownPeer.hello();
  const mine = await completedInput(ownPeer, DEVICE, "own-key", "own");
  await ownPeer.close();
  own = {
    resultIds: new Set([mine.resultId]),
    deliveryIds: new Set([mine.deliveryId]),
    keys: new Set(["own-key"]),
    head: mine.cursor,
  };
});
afterAll(async () => {
  await harness.stop();
  await t.cleanup();
});

function templates() {
  const key = fc.oneof(fc.constantFrom(other.key, "own-key", "fresh-1", "fresh-2"), fc.uuid());
  const forgedField = fc.option(
    fc.constantFrom<[string, unknown]>(
      ["deviceId", OTHER],
      ["sub", OTHER],
      ["owner", OTHER],
      ["device", { id: OTHER }],
    ),
    { freq: 4 },
  );
  const resume = fc.option(
    fc.record({
      serverInstanceId: fc.constantFrom(instance, `${instance}-forged`, OTHER, "instance-0"),
      cursor: fc.oneof(
        fc.constantFrom(0, own.head, other.head, other.head + 1, 2 ** 31),
        fc.nat({ max: 50 }),
      ),
    }),
    { freq: 5 },
  );
  const withForged = (frame: Json, forged: [string, unknown] | null) =>
    forged ? { ...frame, [forged[0]]: forged[1] } : frame;
  return fc.oneof(
    fc
      .tuple(resume, fc.constantFrom(["turn.correlation.v2"], [], ["other"]), forgedField)
      .map(([resumeFrom, capabilities, forged]) =>
        withForged(
          {
            type: "hello",
            requestId: randomUUID(),
            proto: 1,
            capabilities,
            ...(resumeFrom ? { resume: resumeFrom } : {}),
          },
          forged,
        ),
      ),
    fc.tuple(key, forgedField).map(([idempotencyKey, forged]) =>
      withForged(
        {
          type: "turn.send",
          requestId: randomUUID(),
          machineId: MACHINE,
          agentId: AGENT,
          idempotencyKey,
          text: "go",
        },
        forged,
      ),
    ),
    fc
      .tuple(key, forgedField)
      .map(([idempotencyKey, forged]) =>
        withForged(
          { type: "turn.stop", requestId: randomUUID(), machineId: MACHINE, agentId: AGENT, idempotencyKey },
          forged,
        ),
      ),
    fc
      .tuple(key, forgedField)
      .map(([idempotencyKey, forged]) =>
        withForged({ type: "receipt.get", requestId: randomUUID(), idempotencyKey }, forged),
      ),
  );
}

interface Sent {
  frame: WireFrame;
  answer: Json;
}

describe("hostile input at the Harness gateway, beyond the frame fuzz", () => {
  it(
    `${CASES} forged device fields, the other device's keys and cursors, forged resumes, replayed and reordered requests: nothing of the other device is disclosed or changed`,
    async () => {
      const tally = new SurfaceTally("harness-ws");
      const connect = async () => {
        const socket = await ProbedSocket.open(wsUrl(harness.url), await tokenFor(DEVICE), "next-result");
        const hello = {
          type: "hello",
          requestId: randomUUID(),
          proto: 1,
          capabilities: ["turn.correlation.v2"],
        };
        await socket.exchange({ text: JSON.stringify(hello), binary: false });
        return socket;
      };
      let peer = await connect();
      const otherPattern = `${t.keys.prefix}:h:{d:${OTHER}}*`;
      const otherBefore = await snapshotKeys(t.redis, otherPattern);
      const allPattern = `${t.keys.prefix}:*`;
      let before = await snapshotKeys(t.redis, allPattern, VOLATILE);
      const sent: Sent[] = [];
      const received: string[] = [];
      const caseArbitrary = fc.oneof(
        {
          arbitrary: templates().map((frame) => ({
            frame: { text: JSON.stringify(frame), binary: false },
            replay: -1,
          })),
          weight: 5,
        },
        { arbitrary: hostileFrame(templates()).map((frame) => ({ frame, replay: -1 })), weight: 3 },
        { arbitrary: fc.nat().map((replay) => ({ frame: undefined, replay })), weight: 2 },
      );
      await fc.assert(
        fc.asyncProperty(caseArbitrary, async ({ frame: fresh, replay }) => {
          const replayOf = fresh ? undefined : sent[replay % Math.max(sent.length, 1)];
          const frame = fresh ??
            replayOf?.frame ?? {
              text: JSON.stringify({ type: "hello", requestId: randomUUID(), proto: 1 }),
              binary: false,
            };
          const exchange = await peer.exchange(frame);
          received.push(exchange.raw);
          const after = await snapshotKeys(t.redis, allPattern, VOLATILE);
          const changes = snapshotChanges(before, after);
          before = after;
          expect(changes.filter((change) => change.includes(`{d:${OTHER}}`))).toEqual([]);
          if (exchange.closed !== undefined) {
            // Only a frame over the WebSocket maxPayload closes the session (1009), and it changed nothing.
            expect({ closed: exchange.closed, oversize: frameBytes(frame) > MAX_FRAME_BYTES }).toEqual({
              closed: 1009,
              oversize: true,
            });
            expect(changes).toEqual([]);
            tally.count("closed_oversize");
            peer = await connect();
            before = await snapshotKeys(t.redis, allPattern, VOLATILE);
            return;
          }
          const answer = exchange.answers.find((item) => String(item.type).endsWith("_result")) as Json;
          for (const event of exchange.answers.filter((item) => item.type === "event")) {
            const payload = event.payload as { resultId?: string; idempotencyKey?: string };
            if (event.kind === "turn.result") expect(own.resultIds).toContain(payload.resultId);
          }
          if ("error" in answer) {
            const { error } = harnessErrorResultSchema.parse(answer);
            expect(error.code).not.toBe("INTERNAL");
            expect(changes).toEqual([]);
            tally.count(`${replayOf ? "replayed_" : ""}rejected_${error.code}`);
            return;
          }
          const receipt = answer.receipt as { deliveryId: string; idempotencyKey: string } | null | undefined;
          if (receipt) {
            if (answer.status === "accepted") own.deliveryIds.add(receipt.deliveryId);
            expect(own.deliveryIds).toContain(receipt.deliveryId);
            own.keys.add(receipt.idempotencyKey);
          }
          if (answer.type === "receipt.get_result" && receipt === null) {
            expect(own.keys.has(JSON.parse(frame.text).idempotencyKey as string)).toBe(false);
          }
          // A resent send or stop is a duplicate of the first (receipt.get may see reservations made since).
          if (replayOf && (answer.type === "turn.send_result" || answer.type === "turn.stop_result")) {
            expect(answer.status).toBe("duplicate");
            expect(receipt?.deliveryId).toBe(
              (replayOf.answer.receipt as { deliveryId?: string } | null)?.deliveryId,
            );
          }
          if (!replayOf) sent.push({ frame, answer });
          tally.count(
            `${replayOf ? "replayed_" : ""}${String(answer.type)}_${String(answer.status ?? answer.resumed ?? "ok")}`,
          );
        }),
        { numRuns: CASES },
      );
      tally.report();
      received.push(JSON.stringify(peer.takeUnsolicited()));
      // A last request's answer comes after every frame the gateway sent before it on this socket.
      const last = await peer.exchange({
        text: JSON.stringify({ type: "hello", requestId: randomUUID(), proto: 1 }),
        binary: false,
      });
      received.push(last.raw);
      const everything = received.join("\n");
      expect(other.secrets.filter((secret) => everything.includes(secret))).toEqual([]);
      expect(snapshotChanges(otherBefore, await snapshotKeys(t.redis, otherPattern))).toEqual([]);
      const otherPeer = await HarnessPeer.connect(harness.url, OTHER);
      await otherPeer.hello();
      expect(await otherPeer.receipt(other.key)).toMatchObject({
        receipt: { deliveryId: other.deliveryId, state: "completed" },
      });
      await otherPeer.close();
      expect((await fetch(`${harness.url}/healthz`)).status).toBe(200);
      peer.close();
    },
    timeoutFor(CASES, 40),
  );
});
