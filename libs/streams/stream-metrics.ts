import { Counter, Gauge, Histogram, type Registry } from "prom-client";
import type { RedisClient } from "../redis/redis-client.js";
import { consumerGroupsOf } from "./group-info.js";

interface WatchedGroup {
  redis: RedisClient;
  streamKey: string;
  stream: string;
  group: string;
  deadLetterKey: string;
}

/**
 * RED metrics per consumer group plus lag, pending and dead-letter size, read from Redis at scrape time. A
 * partitioned stream is watched once per partition; its gauges are the sums over the partitions.
 */
export class StreamMetrics {
  readonly processed: Counter<"stream" | "group">;
  readonly failed: Counter<"stream" | "group">;
  readonly deadLettered: Counter<"stream" | "group">;
  readonly outageRetries: Counter<"stream" | "group">;
  readonly duration: Histogram<"stream" | "group">;
  private readonly watched = new Map<string, WatchedGroup>();

  private constructor(registry: Registry) {
    const labelNames = ["stream", "group"] as const;
    this.processed = new Counter({
      name: "stream_entries_processed_total",
      help: "Stream entries handled and acknowledged.",
      labelNames,
      registers: [registry],
    });
    this.failed = new Counter({
      name: "stream_entries_failed_total",
      help: "Stream entry handler attempts that threw for a reason other than a Redis outage (retried, then dead-lettered).",
      labelNames,
      registers: [registry],
    });
    this.deadLettered = new Counter({
      name: "stream_entries_dead_lettered_total",
      help: "Stream entries moved to the dead-letter stream.",
      labelNames,
      registers: [registry],
    });
    this.outageRetries = new Counter({
      name: "stream_outage_retries_total",
      help: "Redis steps of a consumer (handler, ack, dead letter) retried because Redis was unreachable or refusing commands for now; never counted toward dead-lettering.",
      labelNames,
      registers: [registry],
    });
    this.duration = new Histogram({
      name: "stream_handler_duration_seconds",
      help: "Time spent in a stream entry handler.",
      labelNames,
      buckets: [0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5],
      registers: [registry],
    });
    const watched = this.watched;
    new Gauge({
      name: "stream_group_lag",
      help: "Entries in the stream not yet delivered to the consumer group.",
      labelNames,
      registers: [registry],
      async collect() {
        await setSums(this, watched, async (group) => (await groupInfo(group)).lag);
      },
    });
    new Gauge({
      name: "stream_group_pending",
      help: "Entries delivered to the consumer group and not yet acknowledged.",
      labelNames,
      registers: [registry],
      async collect() {
        await setSums(this, watched, async (group) => (await groupInfo(group)).pending);
      },
    });
    new Gauge({
      name: "stream_dead_letter_length",
      help: "Entries waiting in a stream's dead-letter stream.",
      labelNames: ["stream"],
      registers: [registry],
      async collect() {
        const lengths = new Map<string, number>();
        const seen = new Set<string>();
        for (const group of watched.values()) {
          if (seen.has(group.deadLetterKey)) continue;
          seen.add(group.deadLetterKey);
          const length = await safeLength(group.redis, group.deadLetterKey);
          lengths.set(group.stream, (lengths.get(group.stream) ?? 0) + length);
        }
        for (const [stream, length] of lengths) this.set({ stream }, length);
      },
    });
  }

  private static readonly byRegistry = new WeakMap<Registry, StreamMetrics>();

  static of(registry: Registry): StreamMetrics {
    let metrics = StreamMetrics.byRegistry.get(registry);
    if (!metrics) {
      metrics = new StreamMetrics(registry);
      StreamMetrics.byRegistry.set(registry, metrics);
    }
    return metrics;
  }

  /** Starts reporting the group; its counters exist at 0 from here, so the first entry is seen by `increase()`. */
  watch(group: WatchedGroup): void {
    this.watched.set(`${group.streamKey}|${group.group}`, group);
    const labels = labelsOf(group);
    for (const counter of [this.processed, this.failed, this.deadLettered, this.outageRetries])
      counter.inc(labels, 0);
    this.duration.zero(labels);
  }
}

const labelsOf = (group: WatchedGroup) => ({ stream: group.stream, group: group.group });

/** Sets the gauge per (stream, group) to the sum of `value` over that group's watched partitions. */
async function setSums(
  gauge: Gauge<"stream" | "group">,
  watched: Map<string, WatchedGroup>,
  value: (group: WatchedGroup) => Promise<number>,
): Promise<void> {
  const sums = new Map<string, { labels: ReturnType<typeof labelsOf>; sum: number }>();
  for (const group of watched.values()) {
    const labels = labelsOf(group);
    const id = `${labels.stream}|${labels.group}`;
    const sum = (sums.get(id)?.sum ?? 0) + (await value(group));
    sums.set(id, { labels, sum });
  }
  for (const { labels, sum } of sums.values()) gauge.set(labels, sum);
}

async function groupInfo(group: WatchedGroup): Promise<{ lag: number; pending: number }> {
  try {
    const info = (await consumerGroupsOf(group.redis, group.streamKey)).find(
      ({ name }) => name === group.group,
    );
    if (info) return { lag: info.lag ?? 0, pending: info.pending };
  } catch {
    // A missing stream has no lag; scrape must never fail because of it.
  }
  return { lag: 0, pending: 0 };
}

async function safeLength(redis: RedisClient, key: string): Promise<number> {
  try {
    return await redis.xlen(key);
  } catch {
    return 0;
  }
}
