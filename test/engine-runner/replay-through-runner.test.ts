import { describe, expect, it, vi } from "vitest";
import type { EngineRecord } from "../../libs/contract/pipeline-payloads.js";
import { loadTranscriptRuntimes, type ReplayStep } from "../../tools/engine-sim/replay/transcript.js";
import { mapDeep, record, textOf } from "../../tools/engine-sim/frames.js";
import { corpusAvailable, corpusPath, corpusSkipReason } from "../helpers/corpus.js";
import { engineSimAgent, loggedInputs, type EngineSimAgent, type SimProtocol } from "./agents-file.js";
import { runtimesOf, seqGapFree, waitForRecords } from "./engine-records.js";
import { useRunnerSuite } from "./runner-process.js";

// Real engine processes boot through tsx; on a loaded machine that takes seconds each.
vi.setConfig({ testTimeout: 150_000, hookTimeout: 150_000 });
const MACHINE = "machine-replay";

interface ReplayCase {
  scenario: string;
  protocol: SimProtocol;
  /** receipt.input.mode the runner must choose for each input, in order. */
  modes: string[];
}

const cases: ReplayCase[] = [
  { scenario: "simple", protocol: "claude-stream-json", modes: ["direct"] },
  { scenario: "message_steering", protocol: "claude-stream-json", modes: ["direct", "native_queue"] },
  { scenario: "queued_turn", protocol: "claude-stream-json", modes: ["direct", "direct"] },
  { scenario: "multi_turn_restart", protocol: "claude-stream-json", modes: ["direct", "direct"] },
  { scenario: "simple", protocol: "codex-app-server", modes: ["direct"] },
  { scenario: "message_steering", protocol: "codex-app-server", modes: ["direct", "steering"] },
  { scenario: "queued_turn", protocol: "codex-app-server", modes: ["direct", "direct"] },
];

const engineOf = (protocol: SimProtocol) => (protocol === "claude-stream-json" ? "claude" : "codex");
const agentIdOf = (replay: ReplayCase) =>
  `${engineOf(replay.protocol)}-${replay.scenario}`.replace(/_/g, "-");
const transcriptOf = (replay: ReplayCase) =>
  corpusPath("t3code", replay.scenario, `${engineOf(replay.protocol)}_transcript.ndjson`);

function isInputOffer(step: ReplayStep): boolean {
  if (step.type !== "expect_outbound") return false;
  return (
    step.frame.type === "prompt.offer" ||
    step.frame.method === "turn/start" ||
    step.frame.method === "turn/steer"
  );
}

function offeredText(step: ReplayStep & { type: "expect_outbound" }): string {
  const claude = record(record(step.frame.message)?.message)?.content;
  return typeof claude === "string" ? claude : (textOf(record(step.frame.params)?.input) ?? "");
}

describe.skipIf(!corpusAvailable)(
  corpusAvailable
    ? "engine-runner + engine-sim replay of corpus transcripts"
    : `engine-runner + engine-sim replay of corpus transcripts (${corpusSkipReason})`,
  () => {
    const agents = new Map<string, EngineSimAgent>();
    const s = useRunnerSuite("replay", MACHINE, (workDir) => {
      for (const replay of cases)
        agents.set(
          agentIdOf(replay),
          engineSimAgent({
            agentId: agentIdOf(replay),
            machineId: MACHINE,
            protocol: replay.protocol,
            replay: transcriptOf(replay),
            workDir,
          }),
        );
      return [...agents.values()].map((agent) => agent.config);
    });

    it.each(cases)(
      "$protocol $scenario: records every frame in order, inputs carry our deliveryId",
      async (replay) => {
        const agentId = agentIdOf(replay);
        const runtimes = loadTranscriptRuntimes(transcriptOf(replay));
        const inputs: { deliveryId: string; deviceId: string; idempotencyKey: string; text: string }[] = [];

        // Drive it as a host would: each input is dispatched once the engine printed everything recorded before it.
        for (const [index, steps] of runtimes.entries()) {
          const inRuntime = (records: EngineRecord[]) =>
            records.filter((entry) => entry.runtimeId === runtimesOf(records)[index]);
          await waitForRecords(s.t.redis, s.t.keys, agentId, (records) => inRuntime(records).length > 0);
          let inboundBefore = 0;
          for (const step of steps) {
            if (step.type === "emit_inbound") inboundBefore += 1;
            if (step.type !== "expect_outbound" || !isInputOffer(step)) continue;
            const needed = inboundBefore;
            await waitForRecords(
              s.t.redis,
              s.t.keys,
              agentId,
              (records) =>
                inRuntime(records).filter((entry) => entry.record.type === "inbound").length >= needed,
            );
            inputs.push(await s.send.input(agentId, offeredText(step)));
          }
          await waitForRecords(s.t.redis, s.t.keys, agentId, (records) =>
            inRuntime(records).some((entry) => entry.record.type === "runtime_exited"),
          );
        }

        // The engine restarts after its last recorded runtime: a fresh runtime follows the last exit.
        const records = await waitForRecords(
          s.t.redis,
          s.t.keys,
          agentId,
          (all) => runtimesOf(all).length > runtimes.length,
        );
        expect(seqGapFree(records)).toBe(true);
        const expected = expectedRecords(replay, runtimes, inputs);
        const ids = runtimesOf(records);
        runtimes.forEach((_steps, index) => {
          const actual = records.filter((entry) => entry.runtimeId === ids[index]).map(comparable);
          expect(actual).toEqual(expected[index]);
        });
        expect(
          records.filter((entry) => entry.runtimeId === ids[runtimes.length]).map(comparable)[0],
        ).toEqual({
          type: "runtime_started",
        });

        const written = loggedInputs(agents.get(agentId) as EngineSimAgent);
        for (const input of inputs)
          expect(written.filter((line) => JSON.stringify(line).includes(input.deliveryId))).toHaveLength(1);
      },
    );

    function expectedRecords(
      replay: ReplayCase,
      runtimes: ReplayStep[][],
      inputs: { deliveryId: string; deviceId: string; idempotencyKey: string; text: string }[],
    ): unknown[][] {
      const pending = [...inputs];
      const modes = [...replay.modes];
      const uuidOf = new Map<string, string>();
      const clientIdOf = new Map<string, string>();
      return runtimes.map((steps) => {
        const expected: unknown[] = [{ type: "runtime_started" }];
        for (const step of steps) {
          if (step.type === "runtime_exit") expected.push({ type: "runtime_exited", code: 0, signal: null });
          if (step.type === "emit_inbound") expected.push({ type: "inbound", frame: rebind(step.frame) });
          if (step.type !== "expect_outbound") continue;
          if (!isInputOffer(step)) {
            if (typeof step.frame.method === "string")
              expected.push({ type: "outbound", frame: { id: step.frame.id, method: step.frame.method } });
            continue;
          }
          const input = pending.shift();
          const mode = modes.shift();
          if (!input) throw new Error("fewer inputs than offers");
          const link = {
            deliveryId: input.deliveryId,
            deviceId: input.deviceId,
            idempotencyKey: input.idempotencyKey,
          };
          const recordedUuid = record(step.frame.message)?.uuid;
          if (typeof recordedUuid === "string") uuidOf.set(recordedUuid, input.deliveryId);
          clientIdOf.set(input.text, input.deliveryId);
          const params = record(step.frame.params);
          const raw =
            replay.protocol === "claude-stream-json"
              ? JSON.stringify({
                  type: "user",
                  message: { role: "user", content: input.text },
                  parent_tool_use_id: null,
                  uuid: input.deliveryId,
                })
              : JSON.stringify({
                  id: step.frame.id,
                  method: step.frame.method,
                  params: {
                    threadId: params?.threadId,
                    ...(step.frame.method === "turn/steer" ? { expectedTurnId: params?.expectedTurnId } : {}),
                    input: [{ type: "text", text: input.text }],
                    clientUserMessageId: input.deliveryId,
                  },
                });
          expected.push({ type: "outbound", raw, input: { ...link, kind: "input", text: input.text, mode } });
        }
        return expected;
      });

      function rebind(frame: Record<string, unknown>): unknown {
        return mapDeep(frame, (value) => {
          if (typeof value === "string") return uuidOf.get(value);
          const item = record(value);
          if (item?.type !== "userMessage") return undefined;
          const clientId = clientIdOf.get(textOf(item.content) ?? "");
          return clientId === undefined ? undefined : { ...item, clientId };
        });
      }
    }
  },
);

/** A record reduced to what the corpus determines (runtime ids, seqs, pids and times are ours). */
function comparable(entry: EngineRecord): unknown {
  const body = entry.record;
  switch (body.type) {
    case "inbound":
      return { type: "inbound", frame: JSON.parse(body.raw) };
    case "outbound": {
      if (body.input) return { type: "outbound", raw: body.raw, input: body.input };
      const frame = JSON.parse(body.raw) as Record<string, unknown>;
      return { type: "outbound", frame: { id: frame.id, method: frame.method } };
    }
    case "runtime_started":
      return { type: "runtime_started" };
    default:
      return body;
  }
}
