import { readFileSync } from "node:fs";
import { z } from "zod";
import type { EngineKind } from "../../libs/contract/engine.js";
import { engineRecordSchema, type EngineRecord } from "../../libs/contract/pipeline-payloads.js";
import { REPLAY_AGENT, type ReplayInput } from "./t3code-records.js";

/** An openharness capture: the inputs typed into an interactive session and the session file's rows. */
const captureSchema = z.object({
  description: z.string(),
  inputs: z.array(z.string().min(1)).min(1),
  records: z.array(z.looseObject({})),
});

export interface TailReplay {
  records: EngineRecord[];
  inputs: ReplayInput[];
}

/**
 * The records a transcript-tail runner writes for a capture: one `inbound` record per session-file row, in file
 * order, and each input's `handed_over` record just before the first row that shows its text (the dispatch
 * necessarily preceded it). Record times follow the rows' own clock, never going backwards.
 */
export function captureRecords(path: string, engine: EngineKind, runtimeId = "tail-1"): TailReplay {
  const capture = captureSchema.parse(JSON.parse(readFileSync(path, "utf8")));
  const inputs: ReplayInput[] = capture.inputs.map((text, index) => ({
    label: String(index + 1),
    deliveryId: `dlv-${index + 1}`,
    idempotencyKey: `key-${index + 1}`,
    text,
  }));
  const bodies: { at: number; record: EngineRecord["record"] }[] = [
    { at: 0, record: { type: "runtime_started" } },
  ];
  const handed = new Set<string>();
  let clock = 0;
  for (const row of capture.records) {
    const raw = JSON.stringify(row);
    const stamp = typeof row.timestamp === "string" ? Date.parse(row.timestamp) : Number.NaN;
    for (const input of inputs) {
      if (handed.has(input.deliveryId) || !raw.includes(JSON.stringify(input.text).slice(1, -1))) continue;
      handed.add(input.deliveryId);
      const at = (Number.isFinite(stamp) ? stamp : clock) - 1;
      bodies.push({ at, record: handOver(input) });
    }
    clock = Number.isFinite(stamp) ? Math.max(clock, stamp) : clock;
    bodies.push({ at: clock, record: { type: "inbound", raw } });
  }
  const firstAt = bodies.find((body) => body.at > 0)?.at ?? 0;
  let last = firstAt;
  const records = bodies.map((body, index): EngineRecord => {
    last = Math.max(last, body.at);
    return engineRecordSchema.parse({
      agentId: REPLAY_AGENT.agentId,
      machineId: REPLAY_AGENT.machineId,
      engine,
      runtimeId,
      seq: index + 1,
      receivedAt: last,
      record: body.record,
    });
  });
  return { records, inputs };
}

function handOver(input: ReplayInput): EngineRecord["record"] {
  return {
    type: "handed_over",
    deliveryId: input.deliveryId,
    deviceId: REPLAY_AGENT.deviceId,
    idempotencyKey: input.idempotencyKey,
    text: input.text ?? "",
    mode: "native_queue",
  };
}
