import type { RedisClient } from "../../libs/redis/redis-client.js";
import { z } from "zod";
import {
  outboxEntrySchema,
  playbackRecordSchema,
  type OutboxEntry,
  type PlaybackRecord,
} from "../../libs/contract/os-playback.js";
import { receiptSchema, type Receipt } from "../../libs/contract/receipt.js";
import { runUpdateRecordSchema, type RunUpdateRecord } from "../../libs/contract/run-update.js";
import { turnResultPayloadSchema, type TurnResultPayload } from "../../libs/contract/turn-result.js";
import { OsDeviceKeys } from "../../libs/os-store/os-keys.js";
import { parseResultRecord, type ResultRecord } from "../../libs/os-store/result-record.js";
import { parseRunRecord, type RunRecord } from "../../libs/os-store/run-record.js";
import type { Keyspace } from "../../libs/redis/keyspace.js";
import { parseEntryPayload } from "../../libs/streams/stream-entry.js";
import { lastAppended } from "../../libs/streams/stream-info.js";
import type { E2EStack } from "../../test/e2e/stack.js";
import type { CampaignPlan } from "./campaign-plan.js";
import type { ChaosLamp, FeedEvent, MalformedFrame, ReceivedPlayback, ReplayRequest } from "./chaos-lamp.js";
import type { RoutingOrder } from "./routing-tap.js";
import { scanKeys } from "../../test/helpers/scan-keys.js";

/** One input line an engine read on stdin, reduced to the id we wrote it with. */
export interface EngineWrite {
  agentId: string;
  deliveryId: string;
  frame: string;
}

/** What one Lamp saw of its run.update feed, across all its connections. */
export interface LampFeed {
  deviceId: string;
  feed: FeedEvent[];
  replayRequests: ReplayRequest[];
  /** voice.request requestIds the Lamp sent (its own runs even when no answer reached it). */
  requestIds: Set<string>;
  /** Connection number → when it ended; the connection open at the end has none. */
  connectionEnds: Map<number, number>;
  lastUpdateId: number;
}

/** A device's stored run.update log (`B:run-updates`, trimmed to about RUN_UPDATES_KEPT) and its sequence head. */
export interface UpdateLog {
  deviceId: string;
  head: number;
  entries: Array<{ updateId: number; record: RunUpdateRecord }>;
}

/** The whole history, read from the real state after the system drained. */
export interface CampaignHistory {
  /** Harness side: the results the result-producer stored, per device. */
  harnessResults: Array<{ deviceId: string; payload: TurnResultPayload }>;
  /** Harness side: every reservation's receipt (turn.send and turn.stop). */
  receipts: Array<{ deviceId: string; receipt: Receipt }>;
  runs: RunRecord[];
  osResults: ResultRecord[];
  outbox: Array<{ deviceId: string; resultKey: string; entry: OutboxEntry }>;
  playbacks: Array<{ deviceId: string; record: PlaybackRecord }>;
  rejections: Array<{ deviceId: string; record: Record<string, unknown> }>;
  protocolErrors: Array<{ deviceId: string; record: Record<string, unknown> }>;
  deadLetters: Array<{ stream: string; entries: number }>;
  engineWrites: EngineWrite[];
  received: ReceivedPlayback[];
  /** Each device's results in the order the router first routed them (`os.routed`, as the campaign watched it). */
  routingOrder: RoutingOrder[];
  lampFeeds: LampFeed[];
  updateLogs: UpdateLog[];
  malformedFrames: MalformedFrame[];
  /** When the history was read (epoch ms): a deadline still ahead of it cannot be judged yet. */
  readAt: number;
}

const rejectionFieldsSchema = z.record(z.string(), z.unknown());

export async function readHistory(
  stack: E2EStack,
  plan: CampaignPlan,
  lamps: Map<string, ChaosLamp>,
  routingOrder: RoutingOrder[],
): Promise<CampaignHistory> {
  const redis = stack.redis;
  const history: CampaignHistory = {
    harnessResults: [],
    receipts: [],
    runs: [],
    osResults: [],
    outbox: [],
    playbacks: [],
    rejections: [],
    protocolErrors: [],
    deadLetters: await readDeadLetters(redis, stack.keys),
    engineWrites: plan.agents.flatMap((agent) =>
      engineWrites(agent.agentId, stack.engineInputs(agent.agentId)),
    ),
    received: [...lamps.values()].flatMap((lamp) => lamp.received),
    routingOrder,
    lampFeeds: [...lamps.values()].map((lamp) => ({
      deviceId: lamp.deviceId,
      feed: [...lamp.feed],
      replayRequests: [...lamp.replayRequests],
      requestIds: new Set(lamp.requestIds),
      connectionEnds: new Map(lamp.connectionEnds),
      lastUpdateId: lamp.lastUpdateId,
    })),
    updateLogs: [],
    malformedFrames: [...lamps.values()].flatMap((lamp) => lamp.malformed),
    readAt: Date.now(),
  };
  for (const deviceId of plan.devices) await readDevice(redis, stack.keys, deviceId, history);
  return history;
}

async function readDevice(
  redis: RedisClient,
  keys: Keyspace,
  deviceId: string,
  history: CampaignHistory,
): Promise<void> {
  const harness = keys.harnessDevice(deviceId);
  for (const resultId of await redis.zrange(`${harness}:results`, 0, -1)) {
    const payload = await redis.hget(`${harness}:result:${resultId}`, "payload");
    if (payload !== null)
      history.harnessResults.push({ deviceId, payload: turnResultPayloadSchema.parse(JSON.parse(payload)) });
  }
  for (const key of await scanKeys(redis, `${harness}:res:*`)) {
    const receipt = await redis.hget(key, "receipt");
    if (receipt !== null)
      history.receipts.push({ deviceId, receipt: receiptSchema.parse(JSON.parse(receipt)) });
  }
  const os = new OsDeviceKeys(keys, deviceId);
  for (const runId of await redis.zrange(os.runs, 0, -1)) {
    const run = parseRunRecord(await redis.hgetall(os.run(runId)));
    if (run) history.runs.push(run);
  }
  for (const key of await scanKeys(redis, `${os.base}:result:*`)) {
    const result = parseResultRecord(await redis.hgetall(key));
    if (result) history.osResults.push(result);
  }
  const outboxPrefix = `${os.base}:outbox:`;
  for (const key of await scanKeys(redis, `${outboxPrefix}*`)) {
    const entry = outboxEntrySchema.parse(await redis.hgetall(key));
    history.outbox.push({ deviceId, resultKey: key.slice(outboxPrefix.length), entry });
  }
  for (const key of await scanKeys(redis, `${os.base}:playback:*`)) {
    history.playbacks.push({ deviceId, record: playbackRecordSchema.parse(await redis.hgetall(key)) });
  }
  history.rejections.push(
    ...(await streamRecords(redis, os.rejections)).map((record) => ({ deviceId, record })),
  );
  history.protocolErrors.push(
    ...(await streamRecords(redis, os.protocolErrors)).map((record) => ({ deviceId, record })),
  );
  history.updateLogs.push(await readUpdateLog(redis, os));
}

async function readUpdateLog(redis: RedisClient, os: OsDeviceKeys): Promise<UpdateLog> {
  const last = await lastAppended(redis, os.runUpdates);
  const head = last === undefined ? 0 : Number(last.slice(last.indexOf("-") + 1));
  const entries = (await redis.xrange(os.runUpdates, "-", "+")).map(([id, fields]) => {
    const record = parseEntryPayload(runUpdateRecordSchema, fields);
    if (!record.ok) throw new Error(`${os.runUpdates} ${id}: malformed run update: ${record.error}`);
    return { updateId: Number(id.slice(id.indexOf("-") + 1)), record: record.value };
  });
  return { deviceId: os.deviceId, head, entries };
}

async function readDeadLetters(redis: RedisClient, keys: Keyspace): Promise<CampaignHistory["deadLetters"]> {
  const streams = await scanKeys(redis, `${keys.prefix}:stream:*:dlq`);
  return Promise.all(
    streams.map(async (key) => ({
      stream: key.slice(`${keys.prefix}:stream:`.length, -":dlq".length),
      entries: await redis.xlen(key),
    })),
  );
}

/** The deliveryId of every input frame written to the engine: Claude `uuid`, Codex `clientUserMessageId`. */
export function engineWrites(agentId: string, lines: Record<string, unknown>[]): EngineWrite[] {
  return lines.flatMap((line) => {
    if (line.type === "user" && typeof line.uuid === "string")
      return [{ agentId, deliveryId: line.uuid, frame: "user" }];
    const params = z.object({ clientUserMessageId: z.string() }).safeParse(line.params);
    if ((line.method === "turn/start" || line.method === "turn/steer") && params.success)
      return [{ agentId, deliveryId: params.data.clientUserMessageId, frame: String(line.method) }];
    return [];
  });
}

async function streamRecords(redis: RedisClient, key: string): Promise<Record<string, unknown>[]> {
  const entries = await redis.xrange(key, "-", "+");
  return entries.map(([, fields]) => rejectionFieldsSchema.parse(JSON.parse(fields[1] ?? "{}")));
}
