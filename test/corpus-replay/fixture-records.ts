import { readFileSync } from "node:fs";
import { z } from "zod";
import { engineKindSchema, type EngineKind } from "../../libs/contract/engine.js";
import { engineRecordSchema, type EngineRecord } from "../../libs/contract/pipeline-payloads.js";
import { REPLAY_AGENT, type ReplayInput } from "./t3code-records.js";

/**
 * Project-owned fixtures: NDJSON whose frames are in the engines' real formats, wrapped in one step per line —
 * `{"engine"}` header, `{"start":true}`, `{"write":"A","frame":…}` (an input line we write), `{"stop":"S","frame":…}`,
 * `{"send":…}` (a frame we write without an input), `{"print":…}` (a line / transcript row the engine wrote),
 * `{"handover":"A","text":…,"at":"<iso>"}` (transcript-tail hand-over), `{"exit":true}`.
 */
const stepSchema = z.union([
  z.strictObject({ engine: engineKindSchema }),
  z.strictObject({ start: z.literal(true) }),
  z.strictObject({ write: z.string(), text: z.string(), frame: z.looseObject({}) }),
  z.strictObject({ stop: z.string(), frame: z.looseObject({}) }),
  z.strictObject({ send: z.looseObject({}) }),
  z.strictObject({ print: z.looseObject({}) }),
  z.strictObject({ handover: z.string(), text: z.string(), at: z.string() }),
  z.strictObject({ exit: z.literal(true) }),
]);

export interface FixtureReplay {
  engine: EngineKind;
  records: EngineRecord[];
  inputs: ReplayInput[];
}

const BASE_MS = Date.UTC(2026, 8, 25, 2, 0, 0);

export function fixtureRecords(path: string, runtimeId = "rt-1"): FixtureReplay {
  const steps = readFileSync(path, "utf8")
    .split("\n")
    .filter((line) => line.trim().length > 0)
    .map((line) => stepSchema.parse(JSON.parse(line)));
  const header = steps[0];
  if (!header || !("engine" in header)) throw new Error(`${path}: first line must name the engine`);
  const inputs: ReplayInput[] = [];
  const records: EngineRecord[] = [];
  let clock = BASE_MS;
  const push = (record: EngineRecord["record"], at = clock) => {
    clock = Math.max(clock + 10, at);
    records.push(
      engineRecordSchema.parse({
        agentId: REPLAY_AGENT.agentId,
        machineId: REPLAY_AGENT.machineId,
        engine: header.engine,
        runtimeId,
        seq: records.length + 1,
        receivedAt: clock,
        record,
      }),
    );
  };
  const ref = (label: string, text?: string) => {
    const input = {
      label,
      deliveryId: `dlv-${label}`,
      idempotencyKey: `key-${label}`,
      ...(text ? { text } : {}),
    };
    inputs.push(input);
    return {
      deliveryId: input.deliveryId,
      deviceId: REPLAY_AGENT.deviceId,
      idempotencyKey: input.idempotencyKey,
    };
  };
  for (const step of steps.slice(1)) {
    if ("start" in step) push({ type: "runtime_started" });
    else if ("exit" in step) push({ type: "runtime_exited", code: null, signal: "SIGKILL" });
    else if ("write" in step)
      push({
        type: "outbound",
        raw: JSON.stringify(step.frame),
        input: { ...ref(step.write, step.text), kind: "input", text: step.text, mode: "direct" },
      });
    else if ("stop" in step)
      push({
        type: "outbound",
        raw: JSON.stringify(step.frame),
        input: { ...ref(step.stop), kind: "stop", mode: "direct" },
      });
    else if ("send" in step) push({ type: "outbound", raw: JSON.stringify(step.send) });
    else if ("print" in step) push({ type: "inbound", raw: JSON.stringify(step.print) });
    else if ("handover" in step)
      push(
        { type: "handed_over", ...ref(step.handover, step.text), text: step.text, mode: "native_queue" },
        Date.parse(step.at),
      );
  }
  return { engine: header.engine, records, inputs };
}
