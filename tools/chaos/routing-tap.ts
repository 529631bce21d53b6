import { STREAM_CATALOG } from "../../libs/contract/catalog.js";
import { errorMessage } from "../../libs/errors/error-message.js";
import type { Keyspace } from "../../libs/redis/keyspace.js";
import type { RedisClient } from "../../libs/redis/redis-client.js";
import { parseEntryPayload, type RawEntry } from "../../libs/streams/stream-entry.js";
import { streamPartitions } from "../../libs/streams/stream-partitions.js";
import { sleep } from "../../libs/timing/sleep.js";

const POLL_MS = 100;
const READ_COUNT = 500;

/** The results of one device in the order the router first routed them. */
export interface RoutingOrder {
  deviceId: string;
  resultIds: string[];
}

/**
 * Watches `os.routed` while the campaign runs and keeps, per device, the order in which the router routed its results
 * (stream order within the device's partition; a result routed again after a crash keeps its first place). It reads
 * every partition from the start without a consumer group and never trims, polling (no blocking read) so a Redis
 * restart only pauses it; entries the consumers' trim removed before it saw them are simply not judged.
 */
export class RoutingTap {
  private readonly order = new Map<string, string[]>();
  private readonly seen = new Set<string>();
  private readonly lastIds: Map<number, string>;
  private stopping = false;
  private loop: Promise<void> | undefined;

  constructor(
    private readonly redis: RedisClient,
    private readonly keys: Keyspace,
    private readonly log: (line: string) => void,
  ) {
    this.lastIds = new Map(streamPartitions(STREAM_CATALOG.osRouted, keys).map((p) => [p, "0-0"]));
  }

  start(): void {
    this.loop = this.run();
  }

  /** Stops after one last read of what is left; answers each device's routing order. Safe to call again. */
  async stop(): Promise<RoutingOrder[]> {
    this.stopping = true;
    await this.loop;
    return [...this.order].map(([deviceId, resultIds]) => ({ deviceId, resultIds }));
  }

  /** Polls until stopped, then reads once more, so what was routed before the stop is all seen. */
  private async run(): Promise<void> {
    let failing = false;
    for (;;) {
      const last = this.stopping;
      try {
        await this.readAll();
        failing = false;
      } catch (error) {
        if (!failing) this.log(`routing tap: os.routed unreadable for now (${errorMessage(error)})`);
        failing = true;
      }
      if (last) return;
      await sleep(POLL_MS);
    }
  }

  private async readAll(): Promise<void> {
    for (const partition of this.lastIds.keys()) while (await this.readPage(partition));
  }

  /** Reads the partition's next page; true when it was full (there may be more). */
  private async readPage(partition: number): Promise<boolean> {
    const key = this.keys.stream(STREAM_CATALOG.osRouted.name, partition);
    const after = this.lastIds.get(partition) ?? "0-0";
    const entries = (await this.redis.xrange(key, `(${after}`, "+", "COUNT", READ_COUNT)) as RawEntry[];
    for (const [, fields] of entries) this.note(fields);
    const last = entries.at(-1);
    if (last) this.lastIds.set(partition, last[0]);
    return entries.length === READ_COUNT;
  }

  /** A malformed entry is skipped: the stream's consumers dead-letter it and the campaign counts dead letters. */
  private note(fields: string[]): void {
    const routed = parseEntryPayload(STREAM_CATALOG.osRouted.schema, fields);
    if (!routed.ok) return;
    const { deviceId, resultId } = routed.value;
    if (this.seen.has(`${deviceId}|${resultId}`)) return;
    this.seen.add(`${deviceId}|${resultId}`);
    const order = this.order.get(deviceId);
    if (order) order.push(resultId);
    else this.order.set(deviceId, [resultId]);
  }
}
