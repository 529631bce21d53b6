import { STREAM_CATALOG } from "../../libs/contract/catalog.js";
import { randomUUID } from "node:crypto";
import fc from "fast-check";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { MAX_PROMPT_BYTES } from "../../libs/contract/harness-wire.js";

import { lampErrorResultSchema } from "../../libs/contract/lamp-wire.js";
import { waitFor } from "../helpers/test-redis.js";
import { lastAppended } from "../helpers/stream-progress.js";
import { casesFor, SurfaceTally, timeoutFor } from "./hostile-budget.js";
import { hostileFrame, type Json, type WireFrame } from "./hostile-values.js";
import { snapshotChanges, snapshotKeys, type KeySnapshot } from "./key-snapshot.js";
import { disclosed, LampWorld, voiceRequest } from "./lamp-world.js";
import { frameBytes, MAX_FRAME_BYTES, ProbedSocket, type Exchange } from "./probed-socket.js";
import { consumerGroupsOf } from "../../libs/streams/group-info.js";

const DEVICE = "lamp-hostile";
const CASES = casesFor(400);
/** BullMQ bookkeeping, Lamp presence and the in-order readers' registry change on their own; everything else must only change when accepted. */
const VOLATILE = /:bull\}:|:lamp-presence$|:lamp-gateway:.*:alive$|:stream-readers:/;
/** Indexes an accepted request lists its device in (the routers' active set, the retention index), outside its base. */
const DEVICE_INDEXES = /:\{part:\d+\}:devices$|:retention-due$/;
/** Opening a socket appends `lamp.connected` once the connection is registered, after the socket is already open. */
const CONNECTION_EVENTS = /:stream:\{os\.lamp_events:\d+\}$/;

let world: LampWorld;

beforeAll(async () => {
  world = await LampWorld.start("hostile-lamp");
});
afterAll(async () => world.stop());

/** Sent valid frames with their first answer: replayed later, in any order, they must answer the same. */
interface Sent {
  frame: WireFrame;
  answer: Json | undefined;
}

function templates(ownRunIds: () => string[]) {
  const { other } = world;
  const runId = fc.oneof(
    fc.constantFrom(...other.runIds),
    fc.nat().map((n) => ownRunIds()[n % Math.max(ownRunIds().length, 1)] ?? "none"),
    fc.uuid(),
  );
  return fc.oneof(
    fc
      .string({ minLength: 1, maxLength: 60 })
      .map((text) => voiceRequest(randomUUID(), `say ${text}`) as Json),
    fc
      .tuple(
        fc.constantFrom(other.playbackId, randomUUID()),
        fc.constantFrom("started", "finished", "rejected"),
      )
      .map(([playbackId, state]) => ({ type: "playback.ack", playbackId, state }) as Json),
    runId.map((id) => ({ type: "voice.cancel", requestId: randomUUID(), runId: id }) as Json),
    fc
      .constantFrom(other.resultId, "result-unknown")
      .map((resultId) => ({ type: "playback.repeat", requestId: randomUUID(), resultId }) as Json),
  );
}

describe("hostile input at the device-gateway Lamp WebSocket", () => {
  it(
    `${CASES} mutated, malformed, binary, oversize, forged-id, replayed and reordered frames: coded answers, no state change from a rejection, nothing of another device`,
    async () => {
      const tally = new SurfaceTally("lamp-ws");
      const own = new Set<string>();
      const ownBase = world.t.keys.osDevice(DEVICE);
      const otherBases = [
        world.t.keys.osDevice(world.other.deviceId),
        world.t.keys.harnessDevice(world.other.deviceId),
      ];
      const lampEvents = world.t.keys.stream(STREAM_CATALOG.lampEvents.name);
      const pattern = `${world.t.keys.prefix}:*`;
      const connect = async () => ProbedSocket.open(world.lampUrl, await world.token(DEVICE), "sentinel");
      let lamp = await connect();
      const otherBefore = await snapshotKeys(
        world.t.redis,
        `${world.t.keys.prefix}:*{d:${world.other.deviceId}}*`,
      );
      const sent: Sent[] = [];
      const caseArbitrary = fc.oneof(
        {
          arbitrary: hostileFrame(templates(() => [...own])).map((frame) => ({ frame, replay: -1 })),
          weight: 9,
        },
        { arbitrary: fc.nat().map((replay) => ({ frame: undefined, replay })), weight: 1 },
      );
      let before: KeySnapshot = await snapshotKeys(world.t.redis, pattern, VOLATILE);

      const check = (frame: WireFrame, exchange: Exchange, changes: string[], replayOf: Sent | undefined) => {
        expect(disclosed(world.other, exchange.raw, frame.text)).toEqual([]);
        expect(changes.filter((change) => otherBases.some((base) => change.includes(base)))).toEqual([]);
        if (exchange.closed !== undefined) {
          expect({ closed: exchange.closed, bytes: frameBytes(frame) > MAX_FRAME_BYTES }).toEqual({
            closed: 1009,
            bytes: true,
          });
          expect(changes).toEqual([]);
          return "closed_oversize";
        }
        expect(exchange.answers.length).toBeLessThanOrEqual(1);
        const answer = exchange.answers[0];
        if (answer === undefined) {
          // Only a valid playback.ack has no answer: it is forwarded, nothing else is written.
          expect(changes.every((change) => change.endsWith(lampEvents))).toBe(true);
          return "ack_forwarded";
        }
        if ("error" in answer) {
          const { error } = lampErrorResultSchema.parse(answer);
          expect(["INTERNAL", "UNAVAILABLE"]).not.toContain(error.code);
          expect(changes).toEqual([]);
          if (replayOf?.answer) expect(answer).toEqual(replayOf.answer);
          return `rejected_${error.code}`;
        }
        expect(changes.every((change) => change.includes(ownBase) || DEVICE_INDEXES.test(change))).toBe(true);
        if (answer.type === "voice.request_result") own.add(String(answer.runId));
        else if (answer.type === "voice.cancel_result") expect(own.has(String(answer.runId))).toBe(true);
        else throw new Error(`unexpected answer ${JSON.stringify(answer)}`);
        if (replayOf) {
          expect(answer).toEqual(replayOf.answer);
          expect(changes).toEqual([]);
        }
        return `accepted_${String(answer.type)}`;
      };

      await fc.assert(
        fc.asyncProperty(caseArbitrary, async ({ frame: fresh, replay }) => {
          const replayOf = fresh ? undefined : sent[replay % Math.max(sent.length, 1)];
          const frame = fresh ?? replayOf?.frame ?? { text: JSON.stringify(voiceRequest()), binary: false };
          const exchange = await lamp.exchange(frame);
          const after = await snapshotKeys(world.t.redis, pattern, VOLATILE);
          const outcome = check(frame, exchange, snapshotChanges(before, after), replayOf);
          tally.count(replayOf ? `replayed_${outcome}` : outcome);
          if (!replayOf && !outcome.startsWith("rejected") && !outcome.startsWith("closed"))
            sent.push({ frame, answer: exchange.answers[0] });
          if (exchange.closed !== undefined) {
            const appended = await lastAppended(world.t.redis, lampEvents);
            lamp = await connect();
            // The gateway registers a socket while it already answers frames: the next snapshot waits for its
            // `lamp.connected`, the one entry a connection appends.
            await waitFor(
              () => lastAppended(world.t.redis, lampEvents),
              (id) => id !== appended,
            );
          }
          before =
            exchange.closed === undefined ? after : await snapshotKeys(world.t.redis, pattern, VOLATILE);
        }),
        { numRuns: CASES },
      );
      tally.report();

      // Acks naming the other device's playback were applied (if at all) under the sender's own identity only.
      const drained = await waitFor(
        () => consumerGroupsOf(world.t.redis, lampEvents),
        (groups) => groups.every((group) => group.pending === 0),
      );
      expect(drained.length).toBeGreaterThan(0);
      const otherAfter = await snapshotKeys(
        world.t.redis,
        `${world.t.keys.prefix}:*{d:${world.other.deviceId}}*`,
      );
      expect(snapshotChanges(otherBefore, otherAfter).filter((change) => !VOLATILE.test(change))).toEqual([]);
      expect(lamp.takeUnsolicited().filter((frame) => frame.type === "playback.start")).toEqual([]);
      expect((await fetch(`${world.services.url}/healthz`)).status).toBe(200);
      expect(world.otherSocketOpen()).toBe(true);
      expect(tally.of("ack_forwarded") + tally.of("accepted_voice.request_result")).toBeGreaterThan(0);
      lamp.close();
    },
    timeoutFor(CASES, 40),
  );

  it("answers a voice.request whose text is 16 KiB + 1 byte with PAYLOAD_TOO_LARGE and stores nothing", async () => {
    const lamp = await ProbedSocket.open(world.lampUrl, await world.token(DEVICE), "sentinel");
    const pattern = `${world.t.keys.prefix}:*`;
    const ignored = new RegExp(`${VOLATILE.source}|${CONNECTION_EVENTS.source}`);
    const before = await snapshotKeys(world.t.redis, pattern, ignored);
    const request = voiceRequest(randomUUID(), "a".repeat(MAX_PROMPT_BYTES + 1));
    const { answers } = await lamp.exchange({ text: JSON.stringify(request), binary: false });
    expect(answers).toEqual([
      {
        type: "voice.request_result",
        requestId: request.requestId,
        error: { code: "PAYLOAD_TOO_LARGE", message: expect.any(String) },
      },
    ]);
    expect(snapshotChanges(before, await snapshotKeys(world.t.redis, pattern, ignored))).toEqual([]);
    lamp.close();
  });

  it("answers frames without type or requestId, arrays and scalars with a coded error and keeps serving the socket", async () => {
    const lamp = await ProbedSocket.open(world.lampUrl, await world.token(DEVICE), "sentinel");
    for (const text of [
      '{"type":"playback.ack"}',
      "{}",
      "[]",
      "[1,2]",
      "null",
      "7",
      '"x"',
      '{"requestId":5}',
    ])
      expect((await lamp.exchange({ text, binary: false })).answers).toEqual([
        expect.objectContaining({
          requestId: null,
          error: expect.objectContaining({ code: "INVALID_REQUEST" }),
        }),
      ]);
    const { answers } = await lamp.exchange({ text: JSON.stringify(voiceRequest()), binary: false });
    expect(answers[0]).toMatchObject({ type: "voice.request_result" });
    expect((await fetch(`${world.services.url}/healthz`)).status).toBe(200);
    lamp.close();
  });
});
