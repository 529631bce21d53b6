import { STREAM_CATALOG } from "../../../libs/contract/catalog.js";
import { HarnessDeviceKeys } from "../../../libs/harness-store/harness-keys.js";
import { OsDeviceKeys } from "../../../libs/os-store/os-keys.js";
import { parseRunRecord, runReceipt } from "../../../libs/os-store/run-record.js";
import type { Receipt } from "../../../libs/contract/receipt.js";
import type { PlaybackStart } from "../../../libs/contract/lamp-wire.js";

import type { E2EStack } from "../stack.js";
import type { TestLamp } from "../test-lamp.js";
import { sleep } from "../../../libs/timing/sleep.js";
import { sampleValue } from "../../helpers/metrics-text.js";
import { streamPartitions } from "../../../libs/streams/stream-partitions.js";
import { scanKeys } from "../../helpers/scan-keys.js";
import { errorMessage } from "../../../libs/errors/error-message.js";

/** GET /v1/runs/:id as the OS query API answers it (docs/wire-protocol.md). */
export interface RunView {
  runId: string;
  requestId: string;
  state: "pending" | "resolved" | "unknown";
  outcome: "completed" | "failed" | "cancelled" | null;
  /** Why the run ended unknown. */
  reason: string | null;
  /** `receipt.input` of its last receipt: how the Harness handed the input to the engine. */
  input: { mode: string; phase: string } | null;
  resultId: string | null;
  idempotencyKey: string;
  deliveryId: string | null;
  serverInstanceId: string | null;
  receiptState: string | null;
  agentId: string;
  voiceTarget: { id: string; expiresAt: string | null };
  replyRoute: string;
  cancelledAt: string | null;
}

/** GET /v1/results/:id: the one stored result, its members and its outbox (playback) state. */
export interface ResultView {
  resultId: string;
  deviceId: string;
  serverInstanceId: string;
  agentId: string;
  outcome: "completed" | "failed" | "cancelled";
  fullText: string;
  speechText: string | null;
  members: { runId: string; deliveryId: string; idempotencyKey: string }[];
  playback: { state: string; reason: string | null; playbackId?: string } | null;
}

export interface RejectionView {
  reason: string;
  detail: string;
  kind: string;
  agentId?: string;
  resultId?: string;
  rejectedBy: string;
}

/** Polls until `accept` holds; fails with the last value seen (a wait that ends silently hides the cause). */
export async function until<T>(
  what: string,
  probe: () => Promise<T>,
  accept: (value: T) => boolean,
  timeoutMs = 30_000,
): Promise<T> {
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    const value = await probe();
    if (accept(value)) return value;
    if (Date.now() > deadline)
      throw new Error(`${what}: not reached within ${timeoutMs} ms; last: ${JSON.stringify(value)}`);
    await sleep(100);
  }
}

/** The device-scoped view of the OS API and the Harness store for one Lamp. */
export class DeviceProbe {
  private readonly os: OsDeviceKeys;
  private readonly harness: HarnessDeviceKeys;

  constructor(
    readonly stack: E2EStack,
    readonly deviceId: string,
  ) {
    this.os = new OsDeviceKeys(stack.keys, deviceId);
    this.harness = new HarnessDeviceKeys(stack.keys, deviceId);
  }

  async run(runId: string): Promise<RunView> {
    const { status, body } = await this.stack.api<RunView>(this.deviceId, `/v1/runs/${runId}`);
    if (status !== 200) throw new Error(`GET /v1/runs/${runId}: ${status} ${JSON.stringify(body)}`);
    return body;
  }

  /** Waits for the run to reach a state; a timeout shows what every service logged about the device. */
  async runUntil(runId: string, accept: (run: RunView) => boolean, timeoutMs?: number): Promise<RunView> {
    try {
      return await until(`run ${runId}`, () => this.run(runId), accept, timeoutMs);
    } catch (error) {
      const logs = this.stack.logsMentioning(this.deviceId);
      throw new Error(`${errorMessage(error)}\n${logs}`);
    }
  }

  /** The stored result, or undefined when the OS has none under that id (404). */
  async result(resultId: string): Promise<ResultView | undefined> {
    const { status, body } = await this.stack.api<ResultView>(this.deviceId, `/v1/results/${resultId}`);
    if (status === 404) return undefined;
    if (status !== 200) throw new Error(`GET /v1/results/${resultId}: ${status} ${JSON.stringify(body)}`);
    return body;
  }

  async resultUntil(resultId: string, accept: (result: ResultView) => boolean): Promise<ResultView> {
    const found = await until(
      `result ${resultId}`,
      async () => (await this.result(resultId)) ?? null,
      (result) => result !== null && accept(result),
    );
    if (!found) throw new Error(`result ${resultId} vanished`);
    return found;
  }

  async rejections(): Promise<RejectionView[]> {
    const { body } = await this.stack.api<{ rejections: RejectionView[] }>(this.deviceId, "/v1/rejections");
    return body.rejections;
  }

  async protocolErrors(): Promise<unknown[]> {
    const { body } = await this.stack.api<{ protocolErrors: unknown[] }>(
      this.deviceId,
      "/v1/protocol-errors",
    );
    return body.protocolErrors;
  }

  /** The Harness receipt the OS last bound to the run (state and, when unknown, the error code). */
  async receipt(runId: string): Promise<Receipt | undefined> {
    const run = parseRunRecord(await this.stack.redis.hgetall(this.os.run(runId)));
    return run && runReceipt(run);
  }

  /** resultIds the Harness retained for this device (what it would replay on resync). */
  harnessResultIds(): Promise<string[]> {
    return this.stack.redis.zrange(this.harness.results, 0, -1);
  }

  /** Outbox states of every result of this device (one entry per result identity). */
  async outboxStates(): Promise<string[]> {
    const keys = await scanKeys(this.stack.redis, this.os.outbox("*"));
    const states = await Promise.all(keys.map((key) => this.stack.redis.hget(key, "state")));
    return states.map((state) => state ?? "(none)");
  }

  /**
   * Waits until everything that has happened so far has run its course: the router decided on every event the
   * Harness logged for this device, every pipeline consumer group is drained, and no playback of the device is
   * queued or being sent. Only then do "nothing more was spoken / resolved" assertions mean something.
   */
  async settled(timeoutMs = 45_000): Promise<void> {
    let quietSince: number | undefined;
    await until(
      `device ${this.deviceId} settled`,
      async () => {
        const quiet = (await this.deviceQuiet()) && (await pipelineDrained(this.stack));
        if (!quiet) quietSince = undefined;
        else quietSince ??= Date.now();
        return quietSince !== undefined && Date.now() - quietSince >= 600;
      },
      (done) => done,
      timeoutMs,
    );
  }

  private async deviceQuiet(): Promise<boolean> {
    const { redis } = this.stack;
    const head = Number((await redis.get(this.harness.eventSequence)) ?? 0);
    const cursor = Number((await redis.hget(this.os.cursor, "cursor")) ?? 0);
    if (cursor < head) return false;
    if (!(await groupsDrained(this.stack, this.os.commands))) return false;
    const states = await this.outboxStates();
    return states.every((state) => state !== "queued" && state !== "sending");
  }
}

const PIPELINE = [
  STREAM_CATALOG.harnessDispatch,
  STREAM_CATALOG.engineRecords,
  STREAM_CATALOG.harnessEvidence,
  STREAM_CATALOG.osRouted,
  STREAM_CATALOG.osResolved,
  STREAM_CATALOG.lampEvents,
];

async function pipelineDrained(stack: E2EStack): Promise<boolean> {
  for (const stream of PIPELINE)
    for (const partition of streamPartitions(stream, stack.keys))
      if (!(await groupsDrained(stack, stack.keys.stream(stream.name, partition)))) return false;
  return true;
}

/** Every consumer group of the stream has nothing pending and has read up to the stream's last entry. */
async function groupsDrained(stack: E2EStack, streamKey: string): Promise<boolean> {
  if ((await stack.redis.exists(streamKey)) === 0) return true;
  const info = toRecord((await stack.redis.call("XINFO", "STREAM", streamKey)) as unknown[]);
  const groups = ((await stack.redis.call("XINFO", "GROUPS", streamKey)) as unknown[][]).map(toRecord);
  return groups.every(
    (group) => Number(group.pending) === 0 && group["last-delivered-id"] === info["last-generated-id"],
  );
}

function toRecord(flat: unknown[]): Record<string, unknown> {
  const record: Record<string, unknown> = {};
  for (let index = 0; index + 1 < flat.length; index += 2) record[String(flat[index])] = flat[index + 1];
  return record;
}

/** deliveryIds of the inputs the agent's engine received on stdin, in order (one entry per written input line). */
/** A Lamp connected for `deviceId` on the stack, with the probe that reads its runs and results. */
export async function deviceOn(
  stack: E2EStack,
  deviceId: string,
): Promise<{ lamp: TestLamp; probe: DeviceProbe }> {
  return { lamp: await stack.lamp(deviceId), probe: new DeviceProbe(stack, deviceId) };
}

export function engineDeliveries(stack: E2EStack, agentId: string): string[] {
  return stack.engineInputs(agentId).flatMap((line) => {
    if (line.type === "user" && typeof line.uuid === "string") return [line.uuid];
    const params = line.params as Record<string, unknown> | undefined;
    if ((line.method === "turn/start" || line.method === "turn/steer") && params)
      return [String(params.clientUserMessageId)];
    return [];
  });
}

/** playback.start frames the Lamp received for one result. */
export const utterancesOf = (lamp: TestLamp, resultId: string): PlaybackStart[] =>
  lamp.utterances.filter((utterance) => utterance.resultId === resultId);

/** The runs' deliveryIds once their receipts bound (the Harness accepted and the OS recorded the delivery). */
/** The value of one Prometheus sample on a service's /metrics (0 when the series does not exist yet). */
export async function metricValue(
  stack: E2EStack,
  service: Parameters<E2EStack["url"]>[0],
  name: string,
  labels: Record<string, string> = {},
): Promise<number> {
  const text = await (await fetch(`${stack.url(service)}/metrics`)).text();
  return sampleValue(text, name, labels) ?? 0;
}
