import { afterEach, beforeEach, describe, expect, it } from "vitest";
import { STREAM_CATALOG } from "../../libs/contract/catalog.js";
import {
  engineRecordEntry,
  engineRecordSchema,
  type EngineRecord,
} from "../../libs/contract/pipeline-payloads.js";
import { hostServices, type HostedServices } from "../../libs/service/service-host.js";
import { newestDeadLetters } from "../../libs/streams/dead-letters.js";
import { streamKeyFor } from "../../libs/streams/stream-partitions.js";
import { PAYLOAD_FIELD } from "../../libs/streams/stream-writer.js";
import { createTestRedis, hostedServiceEnv, waitFor, type TestRedis } from "../../test/helpers/test-redis.js";
import { evidenceExtractorService } from "./definition.js";

const AGENT = "agent-lost";
const RUNTIME = "runtime-lost";
const { engineRecords, harnessEvidence } = STREAM_CATALOG;

let t: TestRedis;
let services: HostedServices | undefined;

beforeEach(() => {
  t = createTestRedis("lost-record");
});

afterEach(async () => {
  await services?.stop();
  await t.cleanup();
});

function record(seq: number, body: EngineRecord["record"]): EngineRecord {
  return engineRecordSchema.parse({
    agentId: AGENT,
    machineId: "machine-lost",
    engine: "claude-stream-json",
    runtimeId: RUNTIME,
    seq,
    receivedAt: Date.UTC(2026, 11, 7, 14, 0, 0) + seq,
    record: body,
  });
}

const written = (deliveryId: string): EngineRecord["record"] => ({
  type: "outbound",
  raw: JSON.stringify({ type: "user", uuid: deliveryId, message: { role: "user", content: deliveryId } }),
  input: {
    deliveryId,
    deviceId: "lamp-lost",
    idempotencyKey: `key-${deliveryId}`,
    kind: "input",
    mode: "direct",
  },
});

async function append(records: EngineRecord[]): Promise<void> {
  const entry = engineRecordEntry(records);
  await t.redis.xadd(streamKeyFor(engineRecords, t.keys, entry), "*", PAYLOAD_FIELD, JSON.stringify(entry));
}

async function evidence(): Promise<
  { kind: string; deliveryId?: string; members?: { deliveryId: string }[]; reason?: string }[]
> {
  const key = streamKeyFor(harnessEvidence, t.keys, { agentId: AGENT });
  return (await t.redis.xrange(key, "-", "+")).map(([, fields]) => JSON.parse(fields[1] ?? "{}"));
}

describe("a dead-lettered engine record", () => {
  it("ends the inputs open for its runtime unknown / EVIDENCE_LOST, and the runtime processes its next record", async () => {
    services = await hostServices("lost-record", [evidenceExtractorService], {
      ...hostedServiceEnv(t),
      STREAM_BLOCK_MS: "100",
      STREAM_RETRY_DELAY_MS: "20",
      STREAM_MAX_DELIVERIES: "2",
      STREAM_CLAIM_MIN_IDLE_MS: "200",
      EVIDENCE_ORDER_WAIT_MS: "50",
    });
    await append([record(1, { type: "runtime_started" }), record(2, written("input-a"))]);
    // Seq 3 never arrives: seq 4 is left pending for its turn, taken again and again, and dead-lettered once it was
    // taken more than STREAM_MAX_DELIVERIES times.
    await append([record(4, { type: "inbound", raw: "{}" })]);
    const [letter] = await waitFor(
      async () => (await newestDeadLetters(t.redis, t.keys, engineRecords.name, 5)).entries,
      (entries) => entries.length === 1,
    );
    expect(letter).toMatchObject({
      code: "MAX_DELIVERIES",
      affects: `runtime ${RUNTIME} of agent ${AGENT}`,
    });
    await append([record(5, written("input-b"))]);

    const seen = await waitFor(evidence, (entries) => entries.length === 3);
    expect(seen.map(({ kind }) => kind)).toEqual(["input.delivered", "evidence.missing", "input.delivered"]);
    expect(seen[1]).toMatchObject({ reason: "EVIDENCE_LOST", members: [{ deliveryId: "input-a" }] });
    expect(seen[2]).toMatchObject({ deliveryId: "input-b" });
  });
});
