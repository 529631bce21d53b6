import { Registry } from "prom-client";
import { afterEach, beforeEach, describe, expect, it } from "vitest";
import type { EngineKind } from "../../libs/contract/engine.js";
import { engineRecordSchema, type EngineRecord } from "../../libs/contract/pipeline-payloads.js";
import { TEST_LIMITS } from "../../test/corpus-replay/redis-replay.js";
import { t3codeRecords } from "../../test/corpus-replay/t3code-records.js";
import { corpusAvailable, corpusPath } from "../../test/helpers/corpus.js";
import { createTestRedis, type TestRedis } from "../../test/helpers/test-redis.js";
import { EvidenceStore } from "./evidence-store.js";
import { extractorMetrics, type ExtractorMetrics } from "./extractor-metrics.js";
import { identityBindingSchema, nativeScopeKey, type IdentityBinding } from "./identity-binding.js";
import { RecordProcessor } from "./record-processor.js";

const AGENT = "agent-resume";
const THREAD = "019f2000-0000-7000-8000-00000000000a";
const TURN = "019f2000-0000-7000-8000-00000000000b";
const SESSION = "5e55-0000-4000-8000-000000000001";

/** The extractor's store, remembering every binding a step persisted (the mapping store keeps only the first). */
class RecordingStore extends EvidenceStore {
  readonly persisted: IdentityBinding[] = [];

  override async persistBindings(agentId: string, bindings: IdentityBinding[]): Promise<number> {
    this.persisted.push(...bindings);
    return super.persistBindings(agentId, bindings);
  }
}

let t: TestRedis;
let store: RecordingStore;
let metrics: ExtractorMetrics;
let processor: RecordProcessor;

beforeEach(() => {
  t = createTestRedis("identity-resume");
  store = new RecordingStore(t.redis, t.keys, 60_000);
  metrics = extractorMetrics(new Registry());
  processor = new RecordProcessor({ store, limits: TEST_LIMITS, orderWaitMs: 0, metrics });
});

afterEach(async () => {
  await t.cleanup();
});

/** One runtime of the agent: runtime_started, then the given bodies in seq order. */
function runtime(engine: EngineKind, runtimeId: string, bodies: EngineRecord["record"][]): EngineRecord[] {
  return [{ type: "runtime_started" } as const, ...bodies].map((record, index) =>
    engineRecordSchema.parse({
      agentId: AGENT,
      machineId: "machine-resume",
      engine,
      runtimeId,
      seq: index + 1,
      receivedAt: Date.UTC(2026, 8, 25, 8, 0, 0) + index,
      record,
    }),
  );
}

const inbound = (frame: unknown): EngineRecord["record"] => ({ type: "inbound", raw: JSON.stringify(frame) });
const outbound = (frame: unknown): EngineRecord["record"] => ({
  type: "outbound",
  raw: JSON.stringify(frame),
});

async function processAll(records: EngineRecord[]): Promise<void> {
  for (const record of records) await processor.process(record);
}

/** The bindings `runtimeId`'s records persisted, one per app entity. */
async function runtimeBindings(runtimeId: string): Promise<IdentityBinding[]> {
  const bound = new Map<string, IdentityBinding>();
  for (const binding of store.persisted)
    if (binding.providerSessionId === runtimeId) bound.set(binding.id, identityBindingSchema.parse(binding));
  return [...bound.values()];
}

function only(bindings: IdentityBinding[], kind: IdentityBinding["appEntityKind"]): IdentityBinding {
  const found = bindings.filter((binding) => binding.appEntityKind === kind);
  expect(found).toHaveLength(1);
  return found[0] as IdentityBinding;
}

async function conflicts(): Promise<number> {
  return (await metrics.bindingConflicts.get()).values[0]?.value ?? 0;
}

/** A Codex thread whose turn was in flight when the runner died; the next runner resumes it and sees the turn end. */
const codexRuntimes = () => [
  ...runtime("codex-app-server", "rt-codex-1", [
    outbound({ id: 1, method: "thread/start", params: {} }),
    inbound({ id: 1, result: { thread: { id: THREAD } } }),
    inbound({ method: "turn/started", params: { threadId: THREAD, turn: { id: TURN } } }),
  ]),
  ...runtime("codex-app-server", "rt-codex-2", [
    outbound({ id: 1, method: "thread/resume", params: { threadId: THREAD } }),
    inbound({ id: 1, result: { thread: { id: THREAD } } }),
    inbound({
      method: "item/started",
      params: { threadId: THREAD, turnId: TURN, item: { type: "agentMessage", id: "msg-1" } },
    }),
  ]),
];

describe("identity bindings survive a resume", () => {
  it("a resumed Codex thread keeps its thread and turn app ids, found by native scope under the first runtime's row", async () => {
    await processAll(codexRuntimes());
    const [first, second] = [await runtimeBindings("rt-codex-1"), await runtimeBindings("rt-codex-2")];
    const thread = only(second, "provider_thread");
    const turn = only(second, "provider_turn");
    expect(thread.appEntityId).toBe(only(first, "provider_thread").appEntityId);
    expect(turn.appEntityId).toBe(only(first, "provider_turn").appEntityId);

    const storedThread = await store.findBinding(
      AGENT,
      nativeScopeKey({
        appEntityKind: "provider_thread",
        provider: "codex-app-server",
        within: null,
        nativeRef: THREAD,
      }),
    );
    expect(storedThread).toMatchObject({ appEntityId: thread.appEntityId, providerSessionId: "rt-codex-1" });
    const storedTurn = await store.findBinding(
      AGENT,
      nativeScopeKey({
        appEntityKind: "provider_turn",
        provider: "codex-app-server",
        within: thread.appEntityId,
        nativeRef: TURN,
      }),
    );
    expect(storedTurn).toMatchObject({ appEntityId: turn.appEntityId, providerSessionId: "rt-codex-1" });
    expect(await conflicts()).toBe(0);
  });

  it("Codex items are bound as items under their turn", async () => {
    await processAll(codexRuntimes());
    const second = await runtimeBindings("rt-codex-2");
    const item = only(second, "item");
    expect(item).toMatchObject({
      nativeKind: "agentMessage",
      nativeRef: "msg-1",
      scope: {
        providerThreadId: only(second, "provider_thread").appEntityId,
        providerTurnId: only(second, "provider_turn").appEntityId,
      },
    });
    const found = await store.findBinding(
      AGENT,
      nativeScopeKey({
        appEntityKind: "item",
        provider: "codex-app-server",
        within: item.scope.providerTurnId,
        nativeRef: "msg-1",
      }),
    );
    expect(found?.appEntityId).toBe(item.appEntityId);
  });

  it("a resumed Claude session keeps its provider thread app id across runner processes", async () => {
    const init = inbound({ type: "system", subtype: "init", session_id: SESSION });
    await processAll([
      ...runtime("claude-stream-json", "rt-claude-1", [
        init,
        { type: "runtime_exited", code: 0, signal: null },
      ]),
      ...runtime("claude-stream-json", "rt-claude-2", [init]),
    ]);
    const first = only(await runtimeBindings("rt-claude-1"), "provider_thread");
    const second = only(await runtimeBindings("rt-claude-2"), "provider_thread");
    expect(second.appEntityId).toBe(first.appEntityId);
    const found = await store.findBinding(
      AGENT,
      nativeScopeKey({
        appEntityKind: "provider_thread",
        provider: "claude-stream-json",
        within: null,
        nativeRef: SESSION,
      }),
    );
    expect(found).toMatchObject({ appEntityId: first.appEntityId, providerSessionId: "rt-claude-1" });
    expect(await conflicts()).toBe(0);
  });
});

describe.skipIf(!corpusAvailable)("recorded resumes keep their app ids (skipped: corpus absent)", () => {
  it.each([
    ["provider_thread_resume", "codex_transcript.ndjson", "codex-app-server"],
    ["claude_idle_resume", "claude_transcript.ndjson", "claude-stream-json"],
  ] as const)(
    "%s: both runtimes bind the one native thread to one app id",
    async (scenario, file, engine) => {
      const { records } = t3codeRecords(corpusPath("t3code", scenario, file), scenario);
      await processAll(records.map((record) => ({ ...record, agentId: AGENT })));
      const runtimes = [...new Set(records.map((record) => record.runtimeId))];
      expect(runtimes).toHaveLength(2);
      const threads = await Promise.all(
        runtimes.map(async (runtimeId) => only(await runtimeBindings(runtimeId), "provider_thread")),
      );
      const [first, second] = threads as [IdentityBinding, IdentityBinding];
      expect(second.nativeRef).toBe(first.nativeRef);
      expect(second.appEntityId).toBe(first.appEntityId);
      const found = await store.findBinding(
        AGENT,
        nativeScopeKey({
          appEntityKind: "provider_thread",
          provider: engine,
          within: null,
          nativeRef: first.nativeRef ?? "",
        }),
      );
      expect(found).toMatchObject({ appEntityId: first.appEntityId, providerSessionId: runtimes[0] });
      expect(await conflicts()).toBe(0);
    },
  );
});
