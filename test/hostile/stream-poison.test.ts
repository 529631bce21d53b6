import { STREAM_CATALOG } from "../../libs/contract/catalog.js";
import { randomUUID } from "node:crypto";
import { mkdtempSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import fc from "fast-check";
import { afterAll, beforeAll, describe, expect, it } from "vitest";

import { engineRecordEntry } from "../../libs/contract/pipeline-payloads.js";
import { OsDeviceKeys } from "../../libs/os-store/os-keys.js";
import { hostServices, type HostedServices } from "../../libs/service/service-host.js";
import { PAYLOAD_FIELD } from "../../libs/streams/stream-writer.js";
import { RunRegistration } from "../../services/device-gateway/run-registration.js";
import { engineRunnerService } from "../../services/engine-runner/definition.js";
import { evidenceExtractorService } from "../../services/evidence-extractor/definition.js";
import { resultProducerService } from "../../services/result-producer/definition.js";
import { runResolverService } from "../../services/run-resolver/definition.js";
import { ttsDispatcherService } from "../../services/tts-dispatcher/definition.js";
import { createTestRedis, waitFor, type TestRedis } from "../helpers/test-redis.js";
import { OsStoreFixture } from "../tts/os-store-fixture.js";
import { ttsTestEnv } from "../tts/tts-service.js";
import { casesFor, SurfaceTally, timeoutFor } from "./hostile-budget.js";
import { applyChanges, hostileFieldName, hostileValue, type Json } from "./hostile-values.js";
import { voiceRequest } from "./lamp-world.js";
import { UNLIMITED_RUNS } from "../os/os-fixture.js";
import { consumerGroupsOf } from "../../libs/streams/group-info.js";
import { osRetentionIndex } from "../../libs/retention/retention-keys.js";

const MACHINE = "machine-hostile";
const AGENT = "agent-transcript";
const VICTIM = "lamp-victim";
const CANARY = "lamp-canary";
const CANARY_RESULT = "canary-result";
const CASES = casesFor(200);

let t: TestRedis;
let services: HostedServices;
let victimRun: { runId: string; idempotencyKey: string };

beforeAll(async () => {
  t = createTestRedis("hostile-streams");
  const dir = mkdtempSync(join(tmpdir(), "hostile-streams-"));
  const agentsFile = join(dir, "agents.json");
  writeFileSync(join(dir, "session.jsonl"), "");
  writeFileSync(
    agentsFile,
    JSON.stringify([
      { agentId: AGENT, machineId: MACHINE, engine: "claude-transcript", path: join(dir, "session.jsonl") },
    ]),
  );
  services = await hostServices(
    "hostile-streams",
    [
      engineRunnerService,
      evidenceExtractorService,
      resultProducerService,
      runResolverService,
      ttsDispatcherService,
    ],
    ttsTestEnv(t, {
      AGENTS_FILE: agentsFile,
      STREAM_MAX_DELIVERIES: "2",
      STREAM_RETRY_DELAY_MS: "20",
      STREAM_CLAIM_MIN_IDLE_MS: "500",
      EVIDENCE_ORDER_WAIT_MS: "20",
      DISPATCH_READY_TIMEOUT_MS: "200",
    }),
  );
  const registered = await new RunRegistration(
    t.redis,
    t.keys,
    "gw-hostile",
    600_000,
    UNLIMITED_RUNS,
    t.keys.partitions,
    osRetentionIndex(t.redis, t.keys),
  ).register(VICTIM, {
    ...voiceRequest(),
    type: "voice.request",
    replyRoute: "voice",
  });
  if (registered.status !== "created") throw new Error("victim run not registered");
  const store = new OsStoreFixture(t.redis, t.keys);
  await store.seedRun(CANARY, { runId: "canary-run", createdAt: Date.now(), replyRoute: "display" });
  await store.seedResolvedResult(CANARY, { resultId: CANARY_RESULT, runIds: ["canary-run"] });
  victimRun = registered;
});
afterAll(async () => {
  await services.stop();
  await t.cleanup();
});

const forgedDevice = fc.constantFrom(VICTIM, `${VICTIM}}`, `{d:${VICTIM}}`, "*", "x".repeat(256), "d\u0000");
const id = () => randomUUID();
const now = () => Date.now();

/** A schema-valid entry per stream, with device fields forged where the stream carries one. */
const templates: Record<string, (device: string) => Json> = {
  [STREAM_CATALOG.harnessDispatch.name]: (deviceId) => ({
    kind: "input",
    deliveryId: id(),
    deviceId,
    idempotencyKey: "k-1",
    agentId: AGENT,
    machineId: MACHINE,
    text: "hello",
    reservedAt: now(),
  }),
  [STREAM_CATALOG.engineRecords.name]: () =>
    engineRecordEntry([
      {
        agentId: AGENT,
        machineId: MACHINE,
        engine: "claude-transcript",
        runtimeId: id(),
        seq: 1,
        receivedAt: now(),
        record: { type: "runtime_started" },
      },
    ]),
  [STREAM_CATALOG.harnessEvidence.name]: (deviceId) => ({
    kind: "input.delivered",
    agentId: AGENT,
    machineId: MACHINE,
    runtimeId: "r-1",
    evidenceId: id(),
    observedAt: now(),
    deliveryId: id(),
    deviceId,
    idempotencyKey: "k-1",
    mode: "direct",
  }),
  [STREAM_CATALOG.osRouted.name]: (deviceId) => ({
    deviceId,
    agentId: AGENT,
    serverInstanceId: "instance-1",
    resultId: id(),
    outcome: "completed",
    fullText: "forged answer",
    members: [{ runId: victimRun.runId, deliveryId: id(), idempotencyKey: victimRun.idempotencyKey }],
    contentHash: "a".repeat(64),
    source: { wireKind: "turn.result", transportInstanceId: "transport-1", eventId: 1 },
    routedAt: now(),
  }),
  // The canary names a stored result (an os.resolved entry for no stored result is dead-lettered by the handler).
  [STREAM_CATALOG.osResolved.name]: (deviceId) =>
    deviceId === CANARY
      ? { deviceId, serverInstanceId: "originating-instance", resultId: CANARY_RESULT, resolvedAt: now() }
      : { deviceId, serverInstanceId: "instance-1", resultId: id(), resolvedAt: now() },
  [STREAM_CATALOG.lampEvents.name]: (deviceId) => ({
    kind: "playback.ack",
    deviceId,
    playbackId: id(),
    state: "finished",
    at: now(),
  }),
};
const schemas: Record<string, { safeParse: (value: unknown) => { success: boolean } }> = {
  [STREAM_CATALOG.harnessDispatch.name]: STREAM_CATALOG.harnessDispatch.schema,
  [STREAM_CATALOG.engineRecords.name]: STREAM_CATALOG.engineRecords.schema,
  [STREAM_CATALOG.harnessEvidence.name]: STREAM_CATALOG.harnessEvidence.schema,
  [STREAM_CATALOG.osRouted.name]: STREAM_CATALOG.osRouted.schema,
  [STREAM_CATALOG.osResolved.name]: STREAM_CATALOG.osResolved.schema,
  [STREAM_CATALOG.lampEvents.name]: STREAM_CATALOG.lampEvents.schema,
};

/** What one injected entry holds: the raw payload field (or none), and whether the catalog schema accepts it. */
interface Injected {
  fields: string[];
  valid: boolean;
}

function entries(stream: string): fc.Arbitrary<Injected> {
  const template = templates[stream] as (device: string) => Json;
  const schema = schemas[stream] as (typeof schemas)[string];
  const asEntry = (text: string): Injected => {
    let json: unknown;
    try {
      json = JSON.parse(text);
    } catch {
      return { fields: [PAYLOAD_FIELD, text], valid: false };
    }
    return { fields: [PAYLOAD_FIELD, text], valid: schema.safeParse(json).success };
  };
  const change = fc.tuple(
    fc.constantFrom("drop", "set", "add", "nest"),
    hostileFieldName,
    hostileValue,
    fc.nat(),
  );
  return fc.oneof(
    { arbitrary: forgedDevice.map((device) => asEntry(JSON.stringify(template(device)))), weight: 2 },
    {
      arbitrary: fc
        .tuple(forgedDevice, fc.array(change, { minLength: 1, maxLength: 2 }))
        .map(([device, changes]) => asEntry(JSON.stringify(applyChanges(template(device), changes)))),
      weight: 5,
    },
    { arbitrary: fc.string({ maxLength: 80 }).map(asEntry), weight: 1 },
    { arbitrary: fc.constant<Injected>({ fields: ["other", "field"], valid: false }), weight: 1 },
    { arbitrary: fc.constant(asEntry(JSON.stringify(template(CANARY)))), weight: 2 },
  );
}

async function groupsSettled(streamKey: string): Promise<boolean> {
  const groups = await consumerGroupsOf(t.redis, streamKey);
  return groups.length > 0 && groups.every((group) => group.pending === 0 && (group.lag ?? 0) === 0);
}

async function deadLetters(stream: string): Promise<Map<string, string>> {
  const found = new Map<string, string>();
  for (const [, fields] of await t.redis.xrange(t.keys.deadLetter(stream), "-", "+")) {
    const value = (name: string) => fields[fields.indexOf(name) + 1] ?? "";
    found.set(value("originalId"), value("error"));
  }
  return found;
}

describe("poison entries injected into every pipeline stream", () => {
  for (const stream of Object.keys(templates)) {
    it(
      `${stream}: malformed, mistyped, unknown-field, forged-device and huge entries are dead-lettered with their error while valid ones are processed`,
      async () => {
        const tally = new SurfaceTally(`stream ${stream}`);
        const victimBefore = await t.redis.hgetall(new OsDeviceKeys(t.keys, VICTIM).run(victimRun.runId));
        const batch = fc.sample(entries(stream), CASES);
        const streamKey = t.keys.stream(stream);
        const pipe = t.redis.pipeline();
        for (const entry of batch) pipe.xadd(streamKey, "*", ...entry.fields);
        const ids = ((await pipe.exec()) ?? []).map(([error, value]) => {
          if (error) throw error;
          return String(value);
        });
        const settled = await waitFor(() => groupsSettled(streamKey), Boolean, {
          timeoutMs: timeoutFor(CASES, 50),
        });
        expect(settled).toBe(true);
        const dlq = await deadLetters(stream);
        batch.forEach((entry, index) => {
          const error = dlq.get(ids[index] as string);
          if (!entry.valid) {
            expect(error, entry.fields.join(" ").slice(0, 200)).toMatch(/^INVALID_PAYLOAD: /);
            tally.count("dead_lettered_invalid");
          } else if (error !== undefined) {
            expect(error.length).toBeGreaterThan(0);
            tally.count("dead_lettered_by_handler");
          } else tally.count("processed");
        });
        tally.report();
        expect(tally.of("processed")).toBeGreaterThan(0);
        expect(await t.redis.hgetall(new OsDeviceKeys(t.keys, VICTIM).run(victimRun.runId))).toEqual(
          victimBefore,
        );
        const victimResults = await t.redis.keys(`${t.keys.osDevice(VICTIM)}:outbox:*`);
        expect(victimResults).toEqual([]);
        expect((await fetch(`${services.url}/healthz`)).status).toBe(200);
      },
      timeoutFor(CASES, 60),
    );
  }
});
