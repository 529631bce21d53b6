import { afterEach, beforeEach, describe, expect, it } from "vitest";
import { engineRecordSchema } from "../../libs/contract/pipeline-payloads.js";
import { AgentKeys } from "../../libs/redis/agent-keys.js";
import { createTestRedis, type TestRedis } from "../../test/helpers/test-redis.js";
import { EvidenceStore } from "./evidence-store.js";
import { initialState } from "./record-reducer.js";
import type { RuntimeState } from "./runtime-state.js";

const AGENT = "agent-expiry";
const RETENTION_MS = 60_000;

let t: TestRedis;
let store: EvidenceStore;

beforeEach(() => {
  t = createTestRedis("runtime-expiry");
  store = new EvidenceStore(t.redis, t.keys, RETENTION_MS);
});

afterEach(async () => {
  await t.cleanup();
});

function runtime(runtimeId: string): RuntimeState {
  const record = engineRecordSchema.parse({
    agentId: AGENT,
    machineId: "machine-expiry",
    engine: "claude-stream-json",
    runtimeId,
    seq: 1,
    receivedAt: Date.UTC(2026, 11, 7, 15, 0, 0),
    record: {
      type: "inbound",
      raw: JSON.stringify({ type: "system", subtype: "init", session_id: runtimeId }),
    },
  });
  return initialState(record);
}

/** Applies the runtime's next record, closing it when `closed`, as the record processor's step does. */
async function advance(state: RuntimeState, closed: boolean): Promise<boolean> {
  const expectedSeq = state.appliedSeq;
  state.appliedSeq += 1;
  state.closed = closed;
  return store.advance(state, expectedSeq);
}

describe("a runtime's evidence state", () => {
  const agent = () => new AgentKeys(t.keys, AGENT);

  it("has no expiry while the runtime is open, and the binding retention once it closed", async () => {
    const open = runtime("rt-open");
    const closed = runtime("rt-closed");
    expect(await advance(open, false)).toBe(true);
    expect(await advance(closed, false)).toBe(true);
    expect(await t.redis.smembers(agent().openRuntimes).then((ids) => ids.sort())).toEqual([
      "rt-closed",
      "rt-open",
    ]);

    expect(await advance(closed, true)).toBe(true);

    expect(await t.redis.pttl(agent().runtime("rt-open"))).toBe(-1);
    const ttl = await t.redis.pttl(agent().runtime("rt-closed"));
    expect(ttl).toBeGreaterThan(RETENTION_MS - 5_000);
    expect(ttl).toBeLessThanOrEqual(RETENTION_MS);
    expect(await store.openRuntimes(AGENT)).toEqual(["rt-open"]);
  });

  it("of a closed runtime still recognises a redelivered record as applied until it expires", async () => {
    const closed = runtime("rt-redelivered");
    expect(await advance(closed, false)).toBe(true);
    expect(await advance(closed, true)).toBe(true);

    expect(await store.load(AGENT, "rt-redelivered")).toMatchObject({ seq: 2, state: { closed: true } });
    expect(await store.advance({ ...closed, appliedSeq: 2 }, 1)).toBe(false);
  });
});
