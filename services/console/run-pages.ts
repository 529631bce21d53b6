import type { RedisClient } from "../../libs/redis/redis-client.js";
import { z } from "zod";
import { OsDeviceKeys } from "../../libs/os-store/os-keys.js";
import { parseRunRecord, runStateSchema, type RunRecord } from "../../libs/os-store/run-record.js";
import type { Keyspace } from "../../libs/redis/keyspace.js";

/** A page position: the last run shown, by (createdAt, deviceId, runId) descending, base64url JSON in the URL. */
const positionSchema = z.tuple([z.number().int(), z.string(), z.string()]);
type Position = z.infer<typeof positionSchema>;

export const runFilterSchema = z.object({
  deviceId: z.string().optional(),
  state: runStateSchema.optional(),
  /** Created at or after (epoch ms). */
  from: z.number().int().optional(),
  /** Created at or before (epoch ms). */
  to: z.number().int().optional(),
  after: z.string().optional(),
  limit: z.number().int().min(1).max(200),
});
export type RunFilter = z.infer<typeof runFilterSchema>;

export interface RunPage {
  runs: RunRecord[];
  /** The position to pass as `after` for the next page; absent on the last page. */
  next: string | undefined;
}

const CHUNK = 200;

export function encodePosition(run: RunRecord): string {
  return Buffer.from(JSON.stringify([run.createdAt, run.deviceId, run.runId])).toString("base64url");
}

function decodePosition(after: string | undefined): Position | undefined {
  if (after === undefined) return undefined;
  const parsed = positionSchema.safeParse(safeJson(Buffer.from(after, "base64url").toString()));
  return parsed.success ? parsed.data : undefined;
}

function safeJson(text: string): unknown {
  try {
    return JSON.parse(text);
  } catch {
    return undefined;
  }
}

/** Descending order of the console's run list: newest first, ties by device then run id. */
function newerFirst(a: RunRecord, b: RunRecord): number {
  if (a.createdAt !== b.createdAt) return b.createdAt - a.createdAt;
  if (a.deviceId !== b.deviceId) return a.deviceId < b.deviceId ? 1 : -1;
  return a.runId < b.runId ? 1 : a.runId > b.runId ? -1 : 0;
}

function isPast(run: RunRecord, position: Position | undefined): boolean {
  if (!position) return true;
  const [createdAt, deviceId, runId] = position;
  return newerFirst({ ...run }, { ...run, createdAt, deviceId, runId }) > 0;
}

/**
 * One page of runs, newest first, filtered by device, state and creation time, read from the per-device indexes
 * (`B:runs`, or `B:runs:pending` for pending runs) in chunks from the page position, so a device with thousands of
 * runs costs one page's reads, not a scan of everything.
 */
export async function runPage(
  redis: RedisClient,
  keys: Keyspace,
  deviceIds: string[],
  filter: RunFilter,
): Promise<RunPage> {
  const position = decodePosition(filter.after);
  const perDevice = await Promise.all(
    deviceIds.map((deviceId) => deviceRuns(redis, new OsDeviceKeys(keys, deviceId), filter, position)),
  );
  const merged = perDevice.flat().sort(newerFirst);
  const runs = merged.slice(0, filter.limit);
  const last = runs.at(-1);
  return { runs, next: merged.length > filter.limit && last ? encodePosition(last) : undefined };
}

/** Up to limit + 1 matching runs of one device past the position (ties at the page edge all included). */
async function deviceRuns(
  redis: RedisClient,
  device: OsDeviceKeys,
  filter: RunFilter,
  position: Position | undefined,
): Promise<RunRecord[]> {
  const index = filter.state === "pending" ? device.pendingRuns : device.runs;
  const newest = Math.min(filter.to ?? Number.MAX_SAFE_INTEGER, position?.[0] ?? Number.MAX_SAFE_INTEGER);
  const oldest = filter.from ?? 0;
  const found: RunRecord[] = [];
  for (let offset = 0; ; offset += CHUNK) {
    const runIds = await redis.zrevrangebyscore(index, newest, oldest, "LIMIT", offset, CHUNK);
    const batch = redis.pipeline();
    for (const runId of runIds) batch.hgetall(device.run(runId));
    for (const [error, hash] of (await batch.exec()) ?? []) {
      if (error) throw error;
      const run = parseRunRecord(z.record(z.string(), z.string()).parse(hash));
      if (run && isPast(run, position) && (filter.state === undefined || run.state === filter.state))
        found.push(run);
    }
    if (runIds.length < CHUNK) return found;
    if (found.length > filter.limit && found.at(-1)?.createdAt !== found[filter.limit - 1]?.createdAt)
      return found;
  }
}

/** How many requests each listed run's result answered, keyed `deviceId|resultKey` (for the group marker). */
export async function groupSizes(
  redis: RedisClient,
  keys: Keyspace,
  runs: RunRecord[],
): Promise<Map<string, number>> {
  const wanted = [
    ...new Set(runs.flatMap((run) => (run.resultKey ? [`${run.deviceId}|${run.resultKey}`] : []))),
  ];
  const batch = redis.pipeline();
  for (const id of wanted) {
    const [deviceId, ...resultKey] = id.split("|");
    batch.hget(new OsDeviceKeys(keys, deviceId ?? "").result(resultKey.join("|")), "members");
  }
  const replies = (await batch.exec()) ?? [];
  const memberCount = z
    .string()
    .nullable()
    .transform((members) => (members === null ? 0 : z.array(z.unknown()).parse(JSON.parse(members)).length));
  return new Map(
    wanted.map((id, index) => {
      const [error, members] = replies[index] ?? [null, null];
      if (error) throw error;
      return [id, memberCount.parse(members)];
    }),
  );
}
