import { describe, expect, it } from "vitest";
import type { EngineRecord } from "../../libs/contract/pipeline-payloads.js";
import { recordsOf } from "../engine-runner/engine-records.js";
import { receiptWhen, resultKeys, useEngineHarness } from "./engine-harness.js";

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

const AGENTS = (Object.keys(ENGINES) as Engine[]).flatMap((engine) =>
  TESTS.map((test) => ({ agentId: agentId(engine, test), ...ENGINES[engine] })),
);
const stack = useEngineHarness("shared-engine", AGENTS);
const peer = (deviceId: string) => stack.peer(deviceId);
type Frame = Record<string, unknown>;
const started = (receipt: Frame) => receipt.state === "started";
const inboundIndex = (records: EngineRecord[], marker: string) =>
  records.findIndex((entry) => entry.record.type === "inbound" && entry.record.raw.includes(marker));
const outboundIndex = (records: EngineRecord[], deliveryId: string) =>
  records.findIndex(
    (entry) => entry.record.type === "outbound" && entry.record.input?.deliveryId === deliveryId,
  );
const engineSaw = (id: string, text: string) =>
  stack.engineInputs(id).filter((line) => JSON.stringify(line).includes(text));
const interruptsOf = (id: string) =>
  stack
    .engineInputs(id)
    .filter((line) => line.type === "control_request" || line.method === "turn/interrupt");

describe.concurrent("a shared engine serves several devices", { timeout: 150_000 }, () => {
  for (const engine of Object.keys(ENGINES) as Engine[]) {
    it(`${engine}: a second device's input waits for the first device's turn and gets its own answer`, async () => {
      const id = agentId(engine, "two-devices");
      const [one, two] = await Promise.all([peer(`${id}-lamp-1`), peer(`${id}-lamp-2`)]);
      await one.send("ask-1", "What is the time?", id);
      const a = await receiptWhen(one, "ask-1", started);
      await two.send("ask-2", "What is the weather?", id);
      const [resultOne] = await one.waitForEvents("turn.result", 1, 60_000);
      const [resultTwo] = await two.waitForEvents("turn.result", 1, 60_000);
      expect(resultKeys(resultOne as Frame)).toEqual(["ask-1"]);
      expect(resultKeys(resultTwo as Frame)).toEqual(["ask-2"]);
      expect((resultTwo as Frame).payload).toMatchObject({ outcome: "completed" });
      const b = await receiptWhen(two, "ask-2", (receipt) => receipt.state === "completed");
      // B was handed over as a turn of its own (not queued behind or steered into A's), after A's answer.
      expect(b.input).toEqual({ mode: "direct", phase: "accepted" });
      expect(await receiptWhen(one, "ask-1", (receipt) => receipt.state === "completed")).toMatchObject({
        error: null,
      });
      const records = await recordsOf(stack.t.redis, stack.t.keys, id);
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
      await receiptWhen(one, "ask-1", started);
      await two.send("ask-2", "Never mind this one.", id);
      await two.stop("stop-2", id, "ask-2");
      expect(await receiptWhen(two, "stop-2", (receipt) => receipt.state !== "queued")).toMatchObject({
        operation: "turn.stop",
        state: "completed",
      });
      expect(await receiptWhen(two, "ask-2", (receipt) => receipt.state === "rejected")).toMatchObject({
        error: { code: "INPUT_WITHDRAWN" },
      });
      const [result] = await one.waitForEvents("turn.result", 1, 60_000);
      expect(resultKeys(result as Frame)).toEqual(["ask-1"]);
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
      await receiptWhen(one, "ask-1", started);
      await two.stop("stop-2", id);
      expect(await receiptWhen(two, "stop-2", (receipt) => receipt.state !== "queued")).toMatchObject({
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
