import type { RedisClient } from "../redis/redis-client.js";
import { z } from "zod";
import type { Logger } from "../logging/logger.js";
import type { Keyspace } from "../redis/keyspace.js";
import type { RedisConnections } from "../redis/connections.js";
import { StreamMetrics } from "./stream-metrics.js";
import { fieldValue, parsePayload, type ParsedPayload, type RawEntry } from "./stream-entry.js";
import { handleInOwnerOrder } from "./owner-order.js";
import { ensureConsumerGroup, PAYLOAD_FIELD } from "./stream-writer.js";
import type { Registry } from "prom-client";
import { sleep } from "../timing/sleep.js";
import { errorMessage } from "../errors/error-message.js";
import { isRedisUnavailableError } from "../redis/redis-errors.js";
import { capDeadLetters, trimConsumedEntries } from "./stream-trim.js";
import { groupExists } from "./group-info.js";

/** XAUTOCLAIM … JUSTID: the cursor to go on from ("0-0" when done), the claimed ids, the ids found deleted. */
const justIdClaimSchema = z.tuple([z.string(), z.array(z.string()), z.array(z.string())]);

export interface StreamEntry<T> {
  id: string;
  payload: T;
  /** How many times this entry has been delivered, this delivery included. */
  deliveries: number;
}

/** An entry of a read, its payload parsed once. */
interface ReadEntry<T> {
  id: string;
  raw: string | undefined;
  parsed: ParsedPayload<T>;
}

export interface StreamConsumerSettings {
  batchSize: number;
  blockMs: number;
  claimMinIdleMs: number;
  maxDeliveries: number;
  retryDelayMs: number;
  /** Trim the stream of what every group is past, and cap its dead letters, this often (absent: never). */
  trimIntervalMs?: number;
  deadLetterMaxLength?: number;
}

export interface StreamConsumerOptions<S extends z.ZodType> {
  connections: RedisConnections;
  keys: Keyspace;
  stream: { name: string; schema: S };
  /** Which partition of the stream this consumer reads (0, the only one, when the stream is not partitioned). */
  partition?: number;
  group: string;
  consumer: string;
  settings: StreamConsumerSettings;
  log: Logger;
  metrics: Registry;
  /** Must make its state change and downstream emit durable before returning; the entry is acked afterwards. */
  handle: (entry: StreamEntry<z.infer<S>>) => Promise<void>;
  /**
   * Optional: handles a whole read batch of valid entries at once (poison and over-delivered entries are
   * dead-lettered first). Same durability contract as `handle`; returns the entries it left undone, which go
   * through `handle` one by one after the rest is acked. If it throws, the whole batch goes through `handle`, so
   * retry counting and dead-lettering stay per entry.
   */
  handleBatch?: (entries: StreamEntry<z.infer<S>>[]) => Promise<StreamEntry<z.infer<S>>[]>;
  /**
   * Optional: the device or agent an entry belongs to. The entries of one read are then handled one owner's after
   * another in stream order and different owners' concurrently, so one read's latency is its slowest owner's, not
   * the sum. Absent: one by one, in stream order. Only for handlers whose effects on one owner never touch another's.
   */
  ownerOf?: (payload: z.infer<S>) => string;
  /**
   * Take the partition over at start: every entry still pending for any consumer of the group becomes this one's
   * (without counting a delivery) and is handled first. For a sole reader that just got the partition's lease.
   */
  takeOver?: boolean;
}

/**
 * A consumer-group reader with at-least-once delivery: own pending entries first, then new ones; ack only after
 * the handler succeeded; stale entries of dead consumers reclaimed with XAUTOCLAIM; poison and repeatedly failing
 * entries moved to `<stream>:dlq` with their error. Handlers are keyed on business identity, so redelivery is safe.
 */
export class StreamConsumer<S extends z.ZodType> {
  private readonly streamKey: string;
  private readonly deadLetterKey: string;
  private readonly reader: RedisClient;
  private readonly metrics: StreamMetrics;
  private readonly lastErrors = new Map<string, string>();
  private stopping = false;
  private readonly stopped: Promise<void>;
  private signalStopped: () => void = () => undefined;
  private loop: Promise<void> | undefined;
  private lastBeatAt = Date.now();
  private nextClaimAt = 0;
  private nextTrimAt = 0;

  constructor(private readonly options: StreamConsumerOptions<S>) {
    const partition = options.partition ?? 0;
    this.streamKey = options.keys.stream(options.stream.name, partition);
    this.deadLetterKey = options.keys.deadLetter(options.stream.name, partition);
    this.reader = options.connections.blocking(`${options.stream.name}:${partition}/${options.group}`);
    this.metrics = StreamMetrics.of(options.metrics);
    this.stopped = new Promise((resolve) => (this.signalStopped = resolve));
    this.metrics.watch({
      redis: options.connections.command,
      streamKey: this.streamKey,
      stream: options.stream.name,
      group: options.group,
      deadLetterKey: this.deadLetterKey,
    });
  }

  get name(): string {
    const { stream, group, partition } = this.options;
    return partition === undefined ? `${stream.name}/${group}` : `${stream.name}:${partition}/${group}`;
  }

  async start(): Promise<void> {
    await ensureConsumerGroup(this.options.connections.command, this.streamKey, this.options.group);
    if (this.options.takeOver) await this.claimEveryPending();
    this.loop = this.run();
  }

  /** Moves every entry pending for the group to this consumer; the read loop handles its own pending first. */
  private async claimEveryPending(): Promise<void> {
    const { group, consumer, settings } = this.options;
    let cursor = "0-0";
    do {
      const reply = await this.options.connections.command.call(
        "XAUTOCLAIM",
        this.streamKey,
        group,
        consumer,
        0,
        cursor,
        "COUNT",
        settings.batchSize,
        "JUSTID",
      );
      [cursor] = justIdClaimSchema.parse(reply);
    } while (cursor !== "0-0");
  }

  /** True while the read loop keeps turning (used by /healthz). */
  isAlive(now = Date.now()): boolean {
    return this.loop !== undefined && now - this.lastBeatAt < this.options.settings.blockMs * 3 + 5_000;
  }

  groupExists(): Promise<boolean> {
    return groupExists(this.options.connections.command, this.streamKey, this.options.group);
  }

  /** Graceful drain: stop reading, let the in-flight batch finish and be acked, then return. */
  async stop(): Promise<void> {
    this.stopping = true;
    this.signalStopped();
    await this.loop;
    this.reader.disconnect();
  }

  private async run(): Promise<void> {
    let pendingCursor: string | undefined = "0";
    while (!this.stopping) {
      this.lastBeatAt = Date.now();
      try {
        if (Date.now() >= this.nextClaimAt) await this.reclaimStale();
        if (Date.now() >= this.nextTrimAt) await this.trim();
        const reading: string = pendingCursor ?? ">";
        const entries = await this.read(reading);
        if (pendingCursor !== undefined && entries.length === 0) {
          pendingCursor = undefined;
          continue;
        }
        const failures = await this.handleRead(entries, reading !== ">");
        if (pendingCursor !== undefined) pendingCursor = entries.at(-1)?.[0];
        if (failures > 0) {
          pendingCursor = "0";
          await sleep(this.options.settings.retryDelayMs);
        }
      } catch (error) {
        if (this.stopping) break;
        // Redis being away is logged once by the connections; the loop just waits for it without a line per turn.
        if (isRedisUnavailableError(error) || !this.options.connections.available)
          await Promise.race([this.options.connections.untilAvailable(), this.stopped]);
        else
          this.options.log.error(
            { err: errorMessage(error), consumer: this.name },
            "stream read failed; retrying",
          );
        await sleep(Math.max(this.options.settings.retryDelayMs, 200));
        pendingCursor = "0";
      }
    }
  }

  private async read(cursor: string): Promise<RawEntry[]> {
    const { group, consumer, settings } = this.options;
    const block = cursor === ">" ? ["BLOCK", settings.blockMs] : [];
    const reply = (await this.reader.call(
      "XREADGROUP",
      "GROUP",
      group,
      consumer,
      "COUNT",
      settings.batchSize,
      ...block,
      "STREAMS",
      this.streamKey,
      cursor,
    )) as [string, RawEntry[]][] | null;
    return (reply?.[0]?.[1] ?? []).filter((entry) => entry[1] !== null);
  }

  /** Bounded state: what every group is past goes, and about the newest `deadLetterMaxLength` dead letters stay. */
  private async trim(): Promise<void> {
    const { trimIntervalMs, deadLetterMaxLength } = this.options.settings;
    this.nextTrimAt = trimIntervalMs === undefined ? Infinity : Date.now() + trimIntervalMs;
    if (trimIntervalMs === undefined) return;
    await trimConsumedEntries(this.options.connections.command, this.streamKey);
    if (deadLetterMaxLength !== undefined)
      await capDeadLetters(this.options.connections.command, this.deadLetterKey, deadLetterMaxLength);
  }

  /** Entries of consumers that died mid-batch become ours after they sat idle long enough. */
  private async reclaimStale(): Promise<void> {
    const { group, consumer, settings } = this.options;
    this.nextClaimAt = Date.now() + Math.max(settings.claimMinIdleMs / 2, 100);
    const reply = (await this.options.connections.command.call(
      "XAUTOCLAIM",
      this.streamKey,
      group,
      consumer,
      settings.claimMinIdleMs,
      "0",
      "COUNT",
      settings.batchSize,
    )) as [string, RawEntry[], string[]];
    const claimed = (reply[1] ?? []).filter((entry) => entry[1] !== null);
    if (claimed.length > 0) {
      this.options.log.info({ consumer: this.name, count: claimed.length }, "reclaimed stale entries");
      await this.handleRead(claimed, true);
    }
  }

  private async handleRead(entries: RawEntry[], redelivered: boolean): Promise<number> {
    const deliveries = redelivered ? await this.deliveryCounts(entries) : new Map<string, number>();
    const individually = this.options.handleBatch
      ? await this.handleAsBatch(this.options.handleBatch, entries, deliveries)
      : entries;
    let failures = 0;
    const handled: string[] = [];
    const read = individually.map(([id, fields]) => this.parseEntry(id, fields));
    await handleInOwnerOrder(
      read,
      (entry) => this.ownerKey(entry),
      async (entry) => {
        const outcome = await this.handleEntry(entry, deliveries.get(entry.id) ?? 1);
        if (outcome === "failed") failures += 1;
        if (outcome === "handled") handled.push(entry.id);
      },
    );
    // One XACK for every entry of the read that was handled (each one's effects are durable by now).
    if (handled.length > 0) {
      await this.options.connections.command.xack(this.streamKey, this.options.group, ...handled);
      for (const id of handled) this.lastErrors.delete(id);
      this.metrics.processed.inc(
        { stream: this.options.stream.name, group: this.options.group },
        handled.length,
      );
    }
    return failures;
  }

  /** Returns the entries still to be handled one by one: those the batch handler left undone, or all on failure. */
  private async handleAsBatch(
    handleBatch: NonNullable<StreamConsumerOptions<S>["handleBatch"]>,
    entries: RawEntry[],
    deliveries: Map<string, number>,
  ): Promise<RawEntry[]> {
    const ready: { raw: RawEntry; entry: StreamEntry<z.infer<S>> }[] = [];
    for (const raw of entries) {
      const [id, fields] = raw;
      const count = deliveries.get(id) ?? 1;
      const payload = fieldValue(fields, PAYLOAD_FIELD);
      const parsed = parsePayload(this.options.stream.schema, payload);
      if (!parsed.ok) await this.deadLetter(id, payload, `INVALID_PAYLOAD: ${parsed.error}`, count);
      else if (count > this.options.settings.maxDeliveries)
        await this.deadLetter(id, payload, this.lastErrors.get(id) ?? "MAX_DELIVERIES: exceeded", count);
      else ready.push({ raw, entry: { id, payload: parsed.value, deliveries: count } });
    }
    if (ready.length === 0) return [];
    const labels = { stream: this.options.stream.name, group: this.options.group };
    const stopTimer = this.metrics.duration.startTimer(labels);
    try {
      const undone = new Set((await handleBatch(ready.map(({ entry }) => entry))).map(({ id }) => id));
      const done = ready.filter(({ entry }) => !undone.has(entry.id)).map(({ entry }) => entry.id);
      if (done.length > 0)
        await this.options.connections.command.xack(this.streamKey, this.options.group, ...done);
      for (const id of done) this.lastErrors.delete(id);
      this.metrics.processed.inc(labels, done.length);
      return ready.filter(({ entry }) => undone.has(entry.id)).map(({ raw }) => raw);
    } catch (error) {
      this.options.log.warn(
        { consumer: this.name, count: ready.length, err: errorMessage(error) },
        "stream batch handler failed; handling its entries one by one",
      );
      return ready.map(({ raw }) => raw);
    } finally {
      stopTimer();
    }
  }

  /** Without `ownerOf` every entry has the same owner; one that does not parse is its own (it is dead-lettered). */
  private ownerKey({ id, parsed }: ReadEntry<z.infer<S>>): string {
    const { ownerOf } = this.options;
    if (!ownerOf) return "";
    return parsed.ok ? ownerOf(parsed.value) : id;
  }

  private parseEntry(id: string, fields: string[]): ReadEntry<z.infer<S>> {
    const raw = fieldValue(fields, PAYLOAD_FIELD);
    return { id, raw, parsed: parsePayload(this.options.stream.schema, raw) };
  }

  /**
   * `handled`: its effects are durable and it is the caller's to ack; `settled`: dead-lettered (acked with it);
   * `failed`: left pending for a retry.
   */
  private async handleEntry(
    { id, raw, parsed }: ReadEntry<z.infer<S>>,
    deliveries: number,
  ): Promise<"handled" | "settled" | "failed"> {
    const labels = { stream: this.options.stream.name, group: this.options.group };
    if (!parsed.ok) {
      await this.deadLetter(id, raw, `INVALID_PAYLOAD: ${parsed.error}`, deliveries);
      return "settled";
    }
    if (deliveries > this.options.settings.maxDeliveries) {
      await this.deadLetter(id, raw, this.lastErrors.get(id) ?? "MAX_DELIVERIES: exceeded", deliveries);
      return "settled";
    }
    const stopTimer = this.metrics.duration.startTimer(labels);
    try {
      await this.options.handle({ id, payload: parsed.value, deliveries });
      return "handled";
    } catch (error) {
      const message = errorMessage(error);
      this.metrics.failed.inc(labels);
      this.lastErrors.set(id, message);
      if (!isRedisUnavailableError(error))
        this.options.log.warn({ consumer: this.name, id, deliveries, err: message }, "stream handler failed");
      if (deliveries >= this.options.settings.maxDeliveries) {
        await this.deadLetter(id, raw, message, deliveries);
        return "settled";
      }
      return "failed";
    } finally {
      stopTimer();
    }
  }

  private async deadLetter(
    id: string,
    raw: string | undefined,
    error: string,
    deliveries: number,
  ): Promise<void> {
    const { group, stream } = this.options;
    await this.options.connections.command
      .multi()
      .xadd(
        this.deadLetterKey,
        "*",
        PAYLOAD_FIELD,
        raw ?? "",
        "originalId",
        id,
        "stream",
        stream.name,
        "group",
        group,
        "error",
        error.slice(0, 2_000),
        "deliveries",
        String(deliveries),
        "failedAt",
        new Date().toISOString(),
      )
      .xack(this.streamKey, group, id)
      .exec();
    this.lastErrors.delete(id);
    this.metrics.deadLettered.inc({ stream: stream.name, group });
    this.options.log.error({ consumer: this.name, id, error }, "stream entry dead-lettered");
  }

  private async deliveryCounts(entries: RawEntry[]): Promise<Map<string, number>> {
    const counts = new Map<string, number>();
    if (entries.length === 0) return counts;
    const first = entries[0]?.[0] as string;
    const last = entries.at(-1)?.[0] as string;
    const pending = (await this.options.connections.command.xpending(
      this.streamKey,
      this.options.group,
      first,
      last,
      entries.length * 2,
    )) as [string, string, number, number][];
    for (const [id, , , count] of pending) counts.set(id, Number(count));
    return counts;
  }
}
