import { mkdtempSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import type { EngineRecord } from "../../libs/contract/streams.js";
import { hostServices, type HostedServices } from "../../libs/service/service-host.js";
import { engineRunnerService } from "../../services/engine-runner/definition.js";
import { evidenceExtractorService } from "../../services/evidence-extractor/definition.js";
import { harnessGatewayService } from "../../services/harness-gateway/definition.js";
import { resultProducerService } from "../../services/result-producer/definition.js";
import {
  engineSimAgent,
  loggedInputs,
  writeAgentsFile,
  type EngineSimAgent,
} from "../engine-runner/agents-file.js";
import { recordsOf } from "../engine-runner/engine-records.js";
import { createTestRedis, waitFor, type TestRedis } from "../helpers/test-redis.js";
import { HarnessPeer, MACHINE, harnessEnv } from "./harness-fixture.js";

/**
 * Issue 12 items 1 and 2: one engine process per agent serves every device. Through the real Harness WebSocket, with
 * the runner, extractor and producer on real engine-sim processes that take 2 s per turn: a second device's input
 * never joins the first device's running turn (it is written when that turn has ended, as its own turn), and a
 * stop only stops what its device owns.
 */
const ENGINES = {
  claude: { protocol: "claude-stream-json", scenario: "e2e-claude-slow-answer" },
  codex: { protocol: "codex-app-server", scenario: "e2e-codex-slow-answer" },
} as const;
type Engine = keyof typeof ENGINES;
const TESTS = ["two-devices", "withdraw", "refuse"] as const;
const agentId = (engine: Engine, test: (typeof TESTS)[number]) => `${engine}-${test}`;

let t: TestRedis;
let harness: HostedServices;
const sims = new Map<string, EngineSimAgent>();

beforeAll(async () => {
  t = createTestRedis("shared-engine");
  const workDir = mkdtempSync(join(tmpdir(), "shared-engine-"));
  for (const engine of Object.keys(ENGINES) as Engine[])
    for (const test of TESTS) {
      const id = agentId(engine, test);
      sims.set(id, engineSimAgent({ agentId: id, machineId: MACHINE, workDir, ...ENGINES[engine] }));
    }
  const agentsFile = writeAgentsFile(
    workDir,
    [...sims.values()].map((sim) => sim.config),
  );
  harness = await hostServices(
    "shared-engine-test",
    [harnessGatewayService, resultProducerService, engineRunnerService, evidenceExtractorService],
    harnessEnv(t, { AGENTS_FILE: agentsFile, MACHINE_ID: MACHINE }),
  );
}, 180_000);
afterAll(async () => {
  await harness?.stop();
  await t?.cleanup();
});

async function peer(deviceId: string): Promise<HarnessPeer> {
  const connected = await HarnessPeer.connect(harness.url, deviceId);
  await connected.hello();
  return connected;
}

type Frame = Record<string, unknown>;
const receiptOfKey = async (device: HarnessPeer, key: string, accept: (receipt: Frame) => boolean) => {
  const answer = await waitFor(
    async () => (await device.receipt(key)).receipt as Frame | null,
    (receipt) => receipt !== null && accept(receipt),
    { timeoutMs: 60_000, intervalMs: 100 },
  );
  if (!answer || !accept(answer)) throw new Error(`receipt ${key} never matched: ${JSON.stringify(answer)}`);
  return answer;
};
const started = (receipt: Frame) => receipt.state === "started";
const members = (event: Frame) =>
  (((event.payload as Frame).correlation as Frame).inputs as Frame[]).map((input) => input.idempotencyKey);
const inboundIndex = (records: EngineRecord[], marker: string) =>
  records.findIndex((entry) => entry.record.type === "inbound" && entry.record.raw.includes(marker));
const outboundIndex = (records: EngineRecord[], deliveryId: string) =>
  records.findIndex(
    (entry) => entry.record.type === "outbound" && entry.record.input?.deliveryId === deliveryId,
  );
const engineSaw = (id: string, text: string) =>
  loggedInputs(sims.get(id) as EngineSimAgent).filter((line) => JSON.stringify(line).includes(text));
const interruptsOf = (id: string) =>
  loggedInputs(sims.get(id) as EngineSimAgent).filter(
    (line) => line.type === "control_request" || line.method === "turn/interrupt",
  );

describe.concurrent("a shared engine serves several devices", { timeout: 150_000 }, () => {
  for (const engine of Object.keys(ENGINES) as Engine[]) {
    it(`${engine}: a second device's input waits for the first device's turn and gets its own answer`, async () => {
      const id = agentId(engine, "two-devices");
      const [one, two] = await Promise.all([peer(`${id}-lamp-1`), peer(`${id}-lamp-2`)]);
      await one.send("ask-1", "What is the time?", id);
      const a = await receiptOfKey(one, "ask-1", started);
      await two.send("ask-2", "What is the weather?", id);
      const [resultOne] = await one.waitForEvents("turn.result", 1, 60_000);
      const [resultTwo] = await two.waitForEvents("turn.result", 1, 60_000);
      expect(members(resultOne as Frame)).toEqual(["ask-1"]);
      expect(members(resultTwo as Frame)).toEqual(["ask-2"]);
      expect((resultTwo as Frame).payload).toMatchObject({ outcome: "completed" });
      const b = await receiptOfKey(two, "ask-2", (receipt) => receipt.state === "completed");
      // B was handed over as a turn of its own (not queued behind or steered into A's), after A's answer.
      expect(b.input).toEqual({ mode: "direct", phase: "accepted" });
      expect(await receiptOfKey(one, "ask-1", (receipt) => receipt.state === "completed")).toMatchObject({
        error: null,
      });
      const records = await recordsOf(t.redis, t.keys, id);
      expect(outboundIndex(records, b.deliveryId as string)).toBeGreaterThan(
        inboundIndex(records, engine === "claude" ? '"type":"result"' : '"turn/completed"'),
      );
      expect(outboundIndex(records, a.deliveryId as string)).toBeGreaterThanOrEqual(0);
      expect(engineSaw(id, "What is the weather?")).toHaveLength(1);
      expect(one.events("turn.result")).toHaveLength(1);
      expect(two.events("turn.result")).toHaveLength(1);
      await Promise.all([one.close(), two.close()]);
    });

    it(`${engine}: a stop from the device whose input waits withdraws it; the running turn of the other device continues`, async () => {
      const id = agentId(engine, "withdraw");
      const [one, two] = await Promise.all([peer(`${id}-lamp-1`), peer(`${id}-lamp-2`)]);
      await one.send("ask-1", "Long task.", id);
      await receiptOfKey(one, "ask-1", started);
      await two.send("ask-2", "Never mind this one.", id);
      await two.stop("stop-2", id, "ask-2");
      expect(await receiptOfKey(two, "stop-2", (receipt) => receipt.state !== "queued")).toMatchObject({
        operation: "turn.stop",
        state: "completed",
      });
      expect(await receiptOfKey(two, "ask-2", (receipt) => receipt.state === "rejected")).toMatchObject({
        error: { code: "INPUT_WITHDRAWN" },
      });
      const [result] = await one.waitForEvents("turn.result", 1, 60_000);
      expect(members(result as Frame)).toEqual(["ask-1"]);
      expect((result as Frame).payload).toMatchObject({ outcome: "completed" });
      expect(engineSaw(id, "Never mind this one.")).toHaveLength(0);
      expect(interruptsOf(id)).toHaveLength(0);
      expect(two.events("turn.result")).toHaveLength(0);
      await Promise.all([one.close(), two.close()]);
    });

    it(`${engine}: a stop from a device that owns nothing of the running turn is refused and interrupts nothing`, async () => {
      const id = agentId(engine, "refuse");
      const [one, two] = await Promise.all([peer(`${id}-lamp-1`), peer(`${id}-lamp-2`)]);
      await one.send("ask-1", "Keep going.", id);
      await receiptOfKey(one, "ask-1", started);
      await two.stop("stop-2", id);
      expect(await receiptOfKey(two, "stop-2", (receipt) => receipt.state !== "queued")).toMatchObject({
        state: "rejected",
        error: { code: "STOP_NOT_APPLICABLE", message: "NOTHING_OWNED_TO_STOP" },
      });
      const [result] = await one.waitForEvents("turn.result", 1, 60_000);
      expect((result as Frame).payload).toMatchObject({ outcome: "completed" });
      expect(interruptsOf(id)).toHaveLength(0);
      await Promise.all([one.close(), two.close()]);
    });
  }
});
