import { randomUUID } from "node:crypto";
import fc from "fast-check";
import WebSocket from "ws";
import { describe, expect, it } from "vitest";
import { harnessErrorCodeSchema, harnessErrorResultSchema } from "../../libs/contract/harness-wire.js";
import { AGENT, MACHINE, storeCounts, tokenFor, useHarnessStack, wsUrl } from "./harness-fixture.js";

const RUNS = Number(process.env.FUZZ_RUNS ?? 10_000);
const DEVICE = "lamp-fuzz";

const s = useHarnessStack("fuzz", {
  RATE_LIMIT_BURST: "1000000",
  RATE_LIMIT_PER_SECOND: "1000000",
  MAX_IN_FLIGHT: "64",
});

type Json = Record<string, unknown>;

/** A raw socket that answers "what was the `_result` to the frame I just sent" (events and resyncs are skipped). */
async function rawPeer(): Promise<{ exchange: (text: string) => Promise<Json>; socket: WebSocket }> {
  const socket = new WebSocket(wsUrl(s.harness.url), {
    headers: { authorization: `Bearer ${await tokenFor(DEVICE)}` },
  });
  await new Promise((resolve, reject) => socket.once("open", resolve).once("error", reject));
  let waiting: ((frame: Json) => void) | undefined;
  socket.on("message", (data) => {
    const frame = JSON.parse(data.toString()) as Json;
    if (typeof frame.type === "string" && frame.type.endsWith("_result")) waiting?.(frame);
  });
  const exchange = (text: string) =>
    new Promise<Json>((resolve, reject) => {
      const timer = setTimeout(() => reject(new Error(`no answer to ${text.slice(0, 200)}`)), 5_000);
      waiting = (frame) => {
        clearTimeout(timer);
        waiting = undefined;
        resolve(frame);
      };
      socket.send(text);
    });
  return { exchange, socket };
}

const key = fc.oneof(fc.constantFrom("k1", "k2", "k3", "existing"), fc.string({ maxLength: 70 }));
const templates = {
  hello: () => ({ type: "hello", requestId: randomUUID(), proto: 1, capabilities: ["turn.correlation.v2"] }),
  send: (k: string) => ({
    type: "turn.send",
    requestId: randomUUID(),
    machineId: MACHINE,
    agentId: AGENT,
    idempotencyKey: k,
    text: "go",
  }),
  stop: (k: string) => ({
    type: "turn.stop",
    requestId: randomUUID(),
    machineId: MACHINE,
    agentId: AGENT,
    idempotencyKey: k,
  }),
  get: (k: string) => ({ type: "receipt.get", requestId: randomUUID(), idempotencyKey: k }),
};
const template = fc
  .tuple(fc.constantFrom(...Object.keys(templates)), key)
  .map(([name, k]) => templates[name as keyof typeof templates](k) as Json);
const oddValue = fc.oneof(
  fc.jsonValue(),
  fc.constant("x".repeat(16 * 1024 + 1)),
  fc.constant("not-a-uuid"),
  fc.constant(""),
  fc.constant(2),
  fc.string({ unit: "grapheme", maxLength: 40 }),
);
/** Valid frames with one or two targeted mutations: a field removed, replaced, or added. */
const mutated = fc
  .tuple(
    template,
    fc.array(fc.tuple(fc.constantFrom("drop", "set", "add"), fc.string({ maxLength: 12 }), oddValue), {
      minLength: 1,
      maxLength: 2,
    }),
  )
  .map(([frame, changes]) => {
    const copy: Json = { ...frame };
    for (const [change, name, value] of changes) {
      const fields = Object.keys(copy);
      const target = fields[name.length % fields.length] as string;
      if (change === "drop") delete copy[target];
      if (change === "set") copy[target] = value;
      if (change === "add") copy[name || "extra"] = value;
    }
    return JSON.stringify(copy);
  });
const frameText = fc.oneof(
  { arbitrary: mutated, weight: 6 },
  { arbitrary: fc.json(), weight: 2 },
  { arbitrary: fc.string({ maxLength: 200 }), weight: 1 },
  { arbitrary: template.map((frame) => JSON.stringify(frame)), weight: 1 },
);

describe("harness-gateway fuzz", () => {
  it(`survives ${RUNS} random and mutated frames: every rejection coded, no rejected frame changes state`, async () => {
    const { exchange, socket } = await rawPeer();
    await exchange(JSON.stringify(templates.hello()));
    await exchange(JSON.stringify(templates.send("existing")));
    let counts = await storeCounts(s.t, DEVICE);
    const tally = { accepted: 0, rejected: 0, byCode: {} as Record<string, number> };
    const started = Date.now();
    await fc.assert(
      fc.asyncProperty(frameText, async (text) => {
        const answer = await exchange(text);
        const after = await storeCounts(s.t, DEVICE);
        if ("error" in answer) {
          const { error } = harnessErrorResultSchema.parse(answer);
          expect(harnessErrorCodeSchema.options).toContain(error.code);
          expect(error.code).not.toBe("INTERNAL");
          expect(after).toEqual(counts);
          tally.rejected += 1;
          tally.byCode[error.code] = (tally.byCode[error.code] ?? 0) + 1;
        } else {
          if (answer.status === "duplicate") expect(after).toEqual(counts);
          tally.accepted += 1;
        }
        counts = after;
      }),
      { numRuns: RUNS },
    );
    const seconds = (Date.now() - started) / 1000;
    console.log(
      `fuzz: ${RUNS} frames in ${seconds.toFixed(1)} s (${Math.round(RUNS / seconds)} frames/s)`,
      JSON.stringify(tally),
    );
    expect(socket.readyState).toBe(WebSocket.OPEN);
    expect(tally.rejected).toBeGreaterThan(RUNS / 2);
    expect((await fetch(`${s.harness.url}/healthz`)).status).toBe(200);
    socket.close();
  }, 120_000);
});
