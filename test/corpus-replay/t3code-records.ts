import { readFileSync } from "node:fs";
import { z } from "zod";
import type { EngineKind } from "../../libs/contract/engine.js";
import { engineRecordSchema, type EngineRecord } from "../../libs/contract/pipeline-payloads.js";

/**
 * Turns a t3code recording into the `engine.records` the engine-runner would have written for it, following the
 * fixed engine I/O conventions: each prompt is one outbound line carrying our deliveryId (Claude `uuid`, Codex
 * `clientUserMessageId`), each interrupt an outbound stop, every engine line an inbound record with the recorded
 * prompt uuids replaced by the live deliveryIds, and a runtime per process start.
 */
const transcriptLineSchema = z.discriminatedUnion("type", [
  z.looseObject({ type: z.literal("transcript_start"), protocol: z.string() }),
  z.looseObject({
    type: z.literal("expect_outbound"),
    label: z.string().optional(),
    frame: z.looseObject({}),
  }),
  z.looseObject({ type: z.literal("emit_inbound"), label: z.string().optional(), frame: z.unknown() }),
  z.looseObject({ type: z.literal("runtime_exit"), status: z.string().optional() }),
]);
type TranscriptLine = z.infer<typeof transcriptLineSchema>;

export interface ReplayInput {
  /** 1-based prompt number, or `s<n>` for the n-th stop. */
  label: string;
  deliveryId: string;
  idempotencyKey: string;
  text?: string;
}

export interface RecordedReplay {
  engine: EngineKind;
  records: EngineRecord[];
  inputs: ReplayInput[];
}

export const REPLAY_AGENT = { agentId: "agent-replay", machineId: "machine-replay", deviceId: "lamp-replay" };
const START_MS = Date.UTC(2026, 8, 24, 6, 0, 0);

export function readTranscript(path: string): TranscriptLine[] {
  return readFileSync(path, "utf8")
    .split("\n")
    .filter((line) => line.trim().length > 0)
    .map((line) => transcriptLineSchema.parse(JSON.parse(line)));
}

export function t3codeRecords(path: string, runtimePrefix = "rt"): RecordedReplay {
  const lines = readTranscript(path);
  const header = lines[0];
  if (header?.type !== "transcript_start") throw new Error(`${path}: no transcript_start`);
  const engine: EngineKind =
    header.protocol === "codex.app-server" ? "codex-app-server" : "claude-stream-json";
  const builder = new RecordBuilder(engine, runtimePrefix);
  for (const line of lines.slice(1)) builder.add(line);
  return { engine, records: builder.records, inputs: builder.inputs };
}

class RecordBuilder {
  readonly records: EngineRecord[] = [];
  readonly inputs: ReplayInput[] = [];
  private runtime = 0;
  private seq = 0;
  private running = false;
  private prompts = 0;
  private stops = 0;
  /** Recorded prompt uuid -> live deliveryId. */
  private readonly liveIds = new Map<string, string>();

  constructor(
    private readonly engine: EngineKind,
    private readonly runtimePrefix: string,
  ) {}

  add(line: TranscriptLine): void {
    if (line.type === "runtime_exit") {
      this.push({ type: "runtime_exited", code: line.status === "success" ? 0 : 1, signal: null });
      this.running = false;
      return;
    }
    if (line.type === "emit_inbound") {
      this.ensureRuntime();
      this.push({ type: "inbound", raw: JSON.stringify(this.withLiveIds(line.frame)) });
      return;
    }
    if (line.type === "expect_outbound") this.outbound(line.frame);
  }

  private outbound(frame: Record<string, unknown>): void {
    if (this.engine === "claude-stream-json") return this.claudeOutbound(frame);
    if (frame.method === "initialize") this.running = false;
    this.ensureRuntime();
    const params = z
      .looseObject({ input: z.array(z.looseObject({ text: z.string() })).optional() })
      .safeParse(frame.params);
    if (frame.method === "turn/start" || frame.method === "turn/steer") {
      const text = params.success ? (params.data.input ?? []).map((part) => part.text).join("\n") : "";
      const input = this.newPrompt(text);
      const raw = JSON.stringify({
        ...frame,
        params: { ...z.looseObject({}).parse(frame.params), clientUserMessageId: input.deliveryId },
      });
      this.push({
        type: "outbound",
        raw,
        input: this.inputRef(input, "input", frame.method === "turn/steer" ? "steering" : "direct"),
      });
      return;
    }
    if (frame.method === "turn/interrupt") {
      this.push({
        type: "outbound",
        raw: JSON.stringify(frame),
        input: this.inputRef(this.newStop(), "stop", "direct"),
      });
      return;
    }
    this.push({ type: "outbound", raw: JSON.stringify(frame) });
  }

  /** SDK-level actions: query.open starts a process, prompt.offer / query.interrupt are stdin lines; others are not. */
  private claudeOutbound(frame: Record<string, unknown>): void {
    if (frame.type === "query.open") {
      this.running = false;
      this.ensureRuntime();
      return;
    }
    if (frame.type === "prompt.offer") {
      this.ensureRuntime();
      const message = z
        .object({ uuid: z.string().optional(), message: z.object({ content: z.unknown() }) })
        .parse(frame.message);
      const content = message.message.content;
      const text = typeof content === "string" ? content : JSON.stringify(content);
      const input = this.newPrompt(text);
      if (message.uuid) this.liveIds.set(message.uuid, input.deliveryId);
      const raw = JSON.stringify({
        type: "user",
        message: { role: "user", content },
        parent_tool_use_id: null,
        uuid: input.deliveryId,
      });
      this.push({ type: "outbound", raw, input: this.inputRef(input, "input", "direct") });
      return;
    }
    if (frame.type === "query.interrupt") {
      const stop = this.newStop();
      const raw = JSON.stringify({
        type: "control_request",
        request_id: `interrupt-${stop.deliveryId}`,
        request: { subtype: "interrupt" },
      });
      this.push({ type: "outbound", raw, input: this.inputRef(stop, "stop", "direct") });
    }
  }

  private newPrompt(text: string): ReplayInput {
    this.prompts += 1;
    const input = {
      label: String(this.prompts),
      deliveryId: `dlv-${this.prompts}`,
      idempotencyKey: `key-${this.prompts}`,
      text,
    };
    this.inputs.push(input);
    return input;
  }

  private newStop(): ReplayInput {
    this.stops += 1;
    const stop = {
      label: `s${this.stops}`,
      deliveryId: `stop-${this.stops}`,
      idempotencyKey: `stop-key-${this.stops}`,
    };
    this.inputs.push(stop);
    return stop;
  }

  private inputRef(input: ReplayInput, kind: "input" | "stop", mode: "direct" | "steering") {
    return {
      deliveryId: input.deliveryId,
      deviceId: REPLAY_AGENT.deviceId,
      idempotencyKey: input.idempotencyKey,
      kind,
      ...(input.text === undefined ? {} : { text: input.text }),
      mode,
    };
  }

  private withLiveIds(value: unknown): unknown {
    if (typeof value === "string") return this.liveIds.get(value) ?? value;
    if (Array.isArray(value)) return value.map((item) => this.withLiveIds(item));
    if (value === null || typeof value !== "object") return value;
    return Object.fromEntries(Object.entries(value).map(([key, child]) => [key, this.withLiveIds(child)]));
  }

  private ensureRuntime(): void {
    if (this.running) return;
    this.runtime += 1;
    this.seq = 0;
    this.running = true;
    this.push({ type: "runtime_started" });
  }

  private push(record: EngineRecord["record"]): void {
    this.seq += 1;
    this.records.push(
      engineRecordSchema.parse({
        agentId: REPLAY_AGENT.agentId,
        machineId: REPLAY_AGENT.machineId,
        engine: this.engine,
        runtimeId: `${this.runtimePrefix}-${this.runtime}`,
        seq: this.seq,
        receivedAt: START_MS + this.records.length * 10,
        record,
      }),
    );
  }
}
