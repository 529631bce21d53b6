import type { RedisClient } from "../../libs/redis/redis-client.js";
import { z } from "zod";
import {
  outboxEntrySchema,
  playbackRecordSchema,
  type OutboxEntry,
  type PlaybackRecord,
} from "../../libs/contract/os-playback.js";
import { OsDeviceKeys } from "../../libs/os-store/os-keys.js";
import { parseResultRecord, type ResultRecord } from "../../libs/os-store/result-record.js";
import { parseRunRecord, type RunRecord } from "../../libs/os-store/run-record.js";
import type { Keyspace } from "../../libs/redis/keyspace.js";

/** One moment of a result's playback: the outbox entry's or one playback's transition, or the Lamp's last ack. */
export interface TimelineStep {
  at: number;
  /** `outbox`, or the playback's kind (`answer`, `notice`, `repeat`). */
  subject: string;
  what: string;
  reason: string | undefined;
}

export interface ResultDetail {
  result: ResultRecord;
  /** The member runs as the run registry holds them (a member whose run is gone is listed by its ids only). */
  members: { runId: string; idempotencyKey: string; deliveryId: string; run: RunRecord | undefined }[];
  outbox: OutboxEntry | undefined;
  timeline: TimelineStep[];
}

const TRANSITIONS = ["queued", "sending", "played", "uncertain", "suppressed", "failed"] as const;

function stepsOf(subject: string, record: OutboxEntry | PlaybackRecord): TimelineStep[] {
  const steps: TimelineStep[] = TRANSITIONS.flatMap((state) => {
    const at = record[`${state}At`];
    return at === undefined
      ? []
      : [{ at, subject, what: state, reason: record.state === state ? record.reason : undefined }];
  });
  if (record.lastAck && record.lastAckAt !== undefined)
    steps.push({ at: record.lastAckAt, subject, what: `Lamp ack ${record.lastAck}`, reason: undefined });
  return steps;
}

const hashSchema = z.record(z.string(), z.string());

/** A stored result with its member runs, its outbox entry and the timeline of its answer and notice playbacks. */
export async function resultDetail(
  redis: RedisClient,
  keys: Keyspace,
  deviceId: string,
  resultId: string,
): Promise<ResultDetail | undefined> {
  const device = new OsDeviceKeys(keys, deviceId);
  const resultKey = await redis.get(device.resultId(resultId));
  if (resultKey === null) return undefined;
  const result = parseResultRecord(await redis.hgetall(device.result(resultKey)));
  if (!result) return undefined;
  const outboxHash = await redis.hgetall(device.outbox(resultKey));
  const outbox = Object.keys(outboxHash).length === 0 ? undefined : outboxEntrySchema.parse(outboxHash);
  const playbacks = await Promise.all(
    [outbox?.playbackId, outbox?.noticePlaybackId].flatMap((playbackId) =>
      playbackId === undefined ? [] : [redis.hgetall(device.playback(playbackId))],
    ),
  );
  const members = await Promise.all(
    result.members.map(async (member) => ({
      ...member,
      run: parseRunRecord(hashSchema.parse(await redis.hgetall(device.run(member.runId)))),
    })),
  );
  const timeline = [
    ...(outbox ? stepsOf("outbox", outbox) : []),
    ...playbacks
      .filter((hash) => Object.keys(hash).length > 0)
      .map((hash) => playbackRecordSchema.parse(hash))
      .flatMap((playback) => stepsOf(playback.kind, playback)),
  ].sort((a, b) => a.at - b.at);
  return { result, members, outbox, timeline };
}
