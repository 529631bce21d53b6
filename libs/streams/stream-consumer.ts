import type { RedisClient } from "../redis/redis-client.js";
import type { StreamConsumerSettings } from "../config/consumer-settings.js";
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
import { isTransientRedisError } from "../redis/redis-errors.js";
import { EntryNotReadyError } from "./entry-not-ready.js";
import { execPipeline } from "../redis/pipeline.js";
import { deadLetterFields, redriveKey, type DeadLetterDraft } from "./dead-letters.js";
import { payloadOwner, type PartitionedStream } from "./stream-partitions.js";
import type { ChainableCommander } from "ioredis";
import { capDeadLetters, trimConsumedEntries } from "./stream-trim.js";
import { groupExists } from "./group-info.js";

/** One entry as XREADGROUP / XAUTOCLAIM / XRANGE return it; an entry deleted while pending comes back without fields. */
const replyEntrySchema = z.tuple([z.string(), z.array(z.string()).nullable()]);
const readReplySchema = z.array(z.tuple([z.string(), z.array(replyEntrySchema)])).nullable();
/** XAUTOCLAIM: the cursor to go on from ("0-0" when done), the claimed entries (or ids, with JUSTID), and since Redis 7 the ids found deleted. */
const claimReplySchema = z.tuple([z.string(), z.array(replyEntrySchema)]).rest(z.unknown());
const justIdClaimSchema = z.tuple([z.string(), z.array(z.string())]).rest(z.unknown());
/** XPENDING's extended form: id, consumer, idle ms, delivery count. */
const pendingRangeSchema = z.array(z.tuple([z.string(), z.string(), z.number(), z.number()]));

const presentEntries = (entries: z.infer<typeof replyEntrySchema>[]): RawEntry[] =>
  entries.flatMap(([id, fields]) => (fields === null ? [] : [[id, fields] satisfies RawEntry]));

/** Outages are waited out with a backoff that doubles from the retry delay up to this. */
const OUTAGE_BACKOFF_MAX_MS = 2_000;

export interface StreamEntry<T> {
  id: string;
  payload: T;
  /** How many times this entry has been delivered, this delivery included. */
  deliveries: number;
}

/** An entry of a read, its payload parsed once. */
interface ReadEntry<T> {
  id: string;
  /** `group`: delivered by the consumer group (acked); `redrive`: taken from the redrive queue (deleted once done). */
  source: "group" | "redrive";
  raw: string | undefined;
  parsed: ParsedPayload<T>;
  deliveries: number;
}

/** An entry whose payload parsed and that has not been read too often: the handler's to try. */
interface ReadyEntry<T> {
  read: ReadEntry<T>;
  entry: StreamEntry<T>;
}

/** Why an entry is given up on: a code an operator can filter by, and the message. */
export interface EntryFailure {
  code: string;
  message: string;
}

export interface StreamConsumerOptions<S extends z.ZodType> {
  connections: RedisConnections;
  keys: Keyspace;
  stream: PartitionedStream & { schema: S };
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
  /** Optional: what a dead letter names as affected (default: the payload's device or agent, when it has one). */
  affects?: (payload: z.infer<S>) => string;
  /**
   * Optional: settles what an entry leaves open when it is given up on (its payload parsed), before the dead letter
   * is written; it may run again for the same entry after a crash, so it must be idempotent.
   */
  onDeadLetter?: (entry: StreamEntry<z.infer<S>>, failure: EntryFailure) => Promise<void>;
}

/**
 * A consumer-group reader with at-least-once delivery: redriven entries first, then its own pending, then new ones;
 * ack only after the handler succeeded; stale entries of dead consumers reclaimed with XAUTOCLAIM; poison and
 * repeatedly failing entries moved to `<stream>:dlq` with their error. A failing entry is retried where it is, so
 * its owner's later entries wait behind it and order holds; a Redis outage is waited out and never counts as a
 * failure. Handlers are keyed on business identity, so redelivery is safe.
 */
export class StreamConsumer<S extends z.ZodType> {
  private readonly streamKey: string;
  private readonly deadLetterKey: string;
  private readonly redriveKey: string;
  private readonly reader: RedisClient;
  private readonly metrics: StreamMetrics;
  private readonly labels: { stream: string; group: string };
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
    this.redriveKey = redriveKey(options.keys, options.stream.name, partition);
    this.reader = options.connections.blocking(`${options.stream.name}:${partition}/${options.group}`);
    this.metrics = StreamMetrics.of(options.metrics);
    this.labels = { stream: options.stream.name, group: options.group };
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
        await this.takeRedriven();
        const reading: string = pendingCursor ?? ">";
        const entries = await this.read(reading);
        if (pendingCursor !== undefined && entries.length === 0) {
          pendingCursor = undefined;
          continue;
        }
        await this.handleRead(entries, "group", reading !== ">");
        if (pendingCursor !== undefined) pendingCursor = entries.at(-1)?.[0];
      } catch (error) {
        if (this.stopping) break;
        // Redis being away is logged once by the connections; the loop just waits for it without a line per turn.
        if (isTransientRedisError(error) || !this.options.connections.available)
          await Promise.race([this.options.connections.untilAvailable(), this.stopped]);
        else
          this.options.log.error(
            { err: errorMessage(error), consumer: this.name },
            "stream read failed; retrying",
          );
        await this.pause(Math.max(this.options.settings.retryDelayMs, 200));
        pendingCursor = "0";
      }
    }
  }

  private async read(cursor: string): Promise<RawEntry[]> {
    const { group, consumer, settings } = this.options;
    const block = cursor === ">" ? ["BLOCK", settings.blockMs] : [];
    const reply = await this.reader.call(
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
    );
    return presentEntries(readReplySchema.parse(reply)?.[0]?.[1] ?? []);
  }

  /** Redriven entries wait in their own queue, so they are handled before the stream's backlog. */
  private async takeRedriven(): Promise<void> {
    const reply = await this.options.connections.command.xrange(
      this.redriveKey,
      "-",
      "+",
      "COUNT",
      this.options.settings.batchSize,
    );
    const entries = presentEntries(z.array(replyEntrySchema).parse(reply));
    if (entries.length > 0) await this.handleRead(entries, "redrive", false);
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
    const reply = await this.options.connections.command.call(
      "XAUTOCLAIM",
      this.streamKey,
      group,
      consumer,
      settings.claimMinIdleMs,
      "0",
      "COUNT",
      settings.batchSize,
    );
    const claimed = presentEntries(claimReplySchema.parse(reply)[1]);
    if (claimed.length > 0) {
      this.options.log.info({ consumer: this.name, count: claimed.length }, "reclaimed stale entries");
      await this.handleRead(claimed, "group", true);
    }
  }

  private async handleRead(
    entries: RawEntry[],
    source: ReadEntry<unknown>["source"],
    redelivered: boolean,
  ): Promise<void> {
    const deliveries = redelivered ? await this.deliveryCounts(entries) : new Map<string, number>();
    const read = entries.map(([id, fields]) => this.parseEntry(id, fields, source, deliveries.get(id) ?? 1));
    const ready = await this.setAsideUnfit(read);
    const individually = this.options.handleBatch
      ? await this.handleAsBatch(this.options.handleBatch, ready)
      : ready;
    const handled: ReadEntry<z.infer<S>>[] = [];
    const leftOwners = new Set<string>();
    await handleInOwnerOrder(
      individually,
      (entry) => this.ownerKey(entry),
      async (entry) => {
        // An owner's entry left pending (we are stopping, or it is not ready) holds back the owner's later ones.
        if (leftOwners.has(this.ownerKey(entry))) return;
        const outcome = await this.handleEntry(entry);
        if (outcome === "handled") handled.push(entry.read);
        if (outcome === "left") leftOwners.add(this.ownerKey(entry));
      },
    );
    await this.acknowledge(handled);
  }

  /** The one check before handling: poison and over-delivered entries are dead-lettered, the rest returned. */
  private async setAsideUnfit(read: ReadEntry<z.infer<S>>[]): Promise<ReadyEntry<z.infer<S>>[]> {
    const ready: ReadyEntry<z.infer<S>>[] = [];
    for (const entry of read) {
      const { parsed, deliveries } = entry;
      if (!parsed.ok) {
        const message = `INVALID_PAYLOAD: ${parsed.error}`;
        await this.deadLetter(entry, undefined, { code: "INVALID_PAYLOAD", message }, deliveries);
        continue;
      }
      const handlerEntry = { id: entry.id, payload: parsed.value, deliveries };
      // Only crashes and reclaims (of dead consumers' entries, or of entries left not ready) raise the delivery count:
      // failures are retried in place, outages not counted.
      if (deliveries > this.options.settings.maxDeliveries) {
        const message = `MAX_DELIVERIES: read ${deliveries} times by consumers that never finished it`;
        await this.deadLetter(entry, handlerEntry, { code: "MAX_DELIVERIES", message }, deliveries);
        continue;
      }
      ready.push({ read: entry, entry: handlerEntry });
    }
    return ready;
  }

  /** Returns the entries still to be handled one by one: those the batch handler left undone, or all on failure. */
  private async handleAsBatch(
    handleBatch: NonNullable<StreamConsumerOptions<S>["handleBatch"]>,
    ready: ReadyEntry<z.infer<S>>[],
  ): Promise<ReadyEntry<z.infer<S>>[]> {
    if (ready.length === 0) return [];
    const stopTimer = this.metrics.duration.startTimer(this.labels);
    let undone: Set<string>;
    try {
      const left = await this.untilRedisAnswers(
        ready.map(({ read }) => read),
        () => handleBatch(ready.map(({ entry }) => entry)),
      );
      undone = new Set(left.map(({ id }) => id));
    } catch (error) {
      if (this.stopping) return [];
      this.options.log.warn(
        { consumer: this.name, count: ready.length, err: errorMessage(error) },
        "stream batch handler failed; handling its entries one by one",
      );
      return ready;
    } finally {
      stopTimer();
    }
    await this.acknowledge(ready.filter(({ entry }) => !undone.has(entry.id)).map(({ read }) => read));
    return ready.filter(({ entry }) => undone.has(entry.id));
  }

  /** Without `ownerOf` every entry has the same owner. */
  private ownerKey({ entry }: ReadyEntry<z.infer<S>>): string {
    return this.options.ownerOf?.(entry.payload) ?? "";
  }

  private parseEntry(
    id: string,
    fields: string[],
    source: ReadEntry<unknown>["source"],
    deliveries: number,
  ): ReadEntry<z.infer<S>> {
    const raw = fieldValue(fields, PAYLOAD_FIELD);
    return { id, source, raw, parsed: parsePayload(this.options.stream.schema, raw), deliveries };
  }

  /**
   * Tries the handler up to `maxDeliveries` times, `retryDelayMs` apart, then dead-letters the entry. `handled`: its
   * effects are durable and it is the caller's to ack; `settled`: dead-lettered (acked with it); `left`: pending,
   * because the consumer stops.
   */
  private async handleEntry(ready: ReadyEntry<z.infer<S>>): Promise<"handled" | "settled" | "left"> {
    const { read, entry } = ready;
    const { maxDeliveries, retryDelayMs } = this.options.settings;
    let failure: EntryFailure = { code: "HANDLER_FAILED", message: "never tried" };
    for (let attempt = 1; attempt <= maxDeliveries; attempt += 1) {
      if (attempt > 1) await this.pause(retryDelayMs);
      if (this.stopping && attempt > 1) return "left";
      const stopTimer = this.metrics.duration.startTimer(this.labels);
      try {
        await this.untilRedisAnswers([read], () => this.options.handle(entry), attempt > 1);
        return "handled";
      } catch (error) {
        if (this.stopping && isTransientRedisError(error)) return "left";
        if (error instanceof EntryNotReadyError) {
          this.options.log.info(
            { consumer: this.name, id: read.id, code: error.code, err: error.message },
            "stream entry not ready; left pending",
          );
          return "left";
        }
        failure = failureOf(error);
        this.metrics.failed.inc(this.labels);
        this.options.log.warn(
          { consumer: this.name, id: read.id, attempt, err: failure.message },
          "stream handler failed",
        );
      } finally {
        stopTimer();
      }
    }
    await this.deadLetter(read, entry, failure, maxDeliveries);
    return "settled";
  }

  /**
   * Runs a Redis step until Redis answers it: an outage (Redis unreachable or refusing commands for now) is waited
   * out with backoff while the entries in hand stay claimed by this consumer, and never counts as a failure. Any
   * other failure is rethrown, and an outage too once the consumer stops.
   */
  private async untilRedisAnswers<T>(
    held: ReadEntry<z.infer<S>>[],
    step: () => Promise<T>,
    retrying = false,
  ): Promise<T> {
    for (let outage = 0; ; outage += 1) {
      try {
        if (retrying || outage > 0) await this.keepHolding(held);
        return await step();
      } catch (error) {
        if (this.stopping || !isTransientRedisError(error)) throw error;
        this.metrics.outageRetries.inc(this.labels);
        if (outage === 0 && this.options.connections.available)
          this.options.log.warn(
            { consumer: this.name, ids: held.map(({ id }) => id), err: errorMessage(error) },
            "redis refused a consumer step; retrying until it answers",
          );
        if (!this.options.connections.available)
          await Promise.race([this.options.connections.untilAvailable(), this.stopped]);
        await this.pause(Math.min(this.options.settings.retryDelayMs * 2 ** outage, OUTAGE_BACKOFF_MAX_MS));
      }
    }
  }

  /**
   * Claims the entries in hand again without counting a delivery (JUSTID): their idle time restarts, so another
   * consumer's XAUTOCLAIM does not take, and count, an entry this one is still retrying.
   */
  private async keepHolding(held: ReadEntry<z.infer<S>>[]): Promise<void> {
    const ids = held.filter(({ source }) => source === "group").map(({ id }) => id);
    if (ids.length === 0) return;
    const { group, consumer } = this.options;
    await this.options.connections.command.call(
      "XCLAIM",
      this.streamKey,
      group,
      consumer,
      0,
      ...ids,
      "JUSTID",
    );
  }

  /** The one place entries are done with: group entries acked, redriven ones removed from the redrive queue. */
  private async acknowledge(entries: ReadEntry<z.infer<S>>[]): Promise<void> {
    if (entries.length === 0) return;
    await this.untilRedisAnswers([], () =>
      execPipeline(this.settle(entries, this.options.connections.command.pipeline())),
    );
    this.metrics.processed.inc(this.labels, entries.length);
  }

  /** Adds what removes the entries from where they were read to `batch`. */
  private settle<B extends ChainableCommander>(entries: ReadEntry<z.infer<S>>[], batch: B): B {
    const from = (source: ReadEntry<unknown>["source"]) =>
      entries.filter((entry) => entry.source === source).map(({ id }) => id);
    const acked = from("group");
    const redriven = from("redrive");
    if (acked.length > 0) batch.xack(this.streamKey, this.options.group, ...acked);
    if (redriven.length > 0) batch.xdel(this.redriveKey, ...redriven);
    return batch;
  }

  private async deadLetter(
    read: ReadEntry<z.infer<S>>,
    entry: StreamEntry<z.infer<S>> | undefined,
    failure: EntryFailure,
    deliveries: number,
  ): Promise<void> {
    const { group, stream } = this.options;
    const settled = entry === undefined ? failure : await this.settleLost(read, entry, failure);
    const affects = entry === undefined ? undefined : this.affectedBy(entry.payload);
    const draft: DeadLetterDraft = {
      stream: stream.name,
      group,
      originalId: read.id,
      code: settled.code,
      error: settled.message.slice(0, 2_000),
      ...(affects === undefined ? {} : { affects }),
      deliveries,
      payload: read.raw ?? "",
    };
    await this.untilRedisAnswers([read], () => {
      const letter = this.options.connections.command
        .multi()
        .xadd(this.deadLetterKey, "*", ...deadLetterFields(draft, new Date()));
      return execPipeline(this.settle([read], letter));
    });
    this.metrics.deadLettered.inc(this.labels);
    this.options.log.error(
      { consumer: this.name, id: read.id, code: settled.code, affects, error: settled.message },
      "stream entry dead-lettered",
    );
  }

  /** Runs `onDeadLetter`; when it fails, the letter still goes and says so. */
  private async settleLost(
    read: ReadEntry<z.infer<S>>,
    entry: StreamEntry<z.infer<S>>,
    failure: EntryFailure,
  ): Promise<EntryFailure> {
    const { onDeadLetter } = this.options;
    if (!onDeadLetter) return failure;
    try {
      await this.untilRedisAnswers([read], () => onDeadLetter(entry, failure));
      return failure;
    } catch (error) {
      this.metrics.failed.inc(this.labels);
      return { ...failure, message: `${failure.message}; settling it failed: ${errorMessage(error)}` };
    }
  }

  private affectedBy(payload: z.infer<S>): string | undefined {
    return this.options.affects?.(payload) ?? payloadOwner(this.options.stream, payload);
  }

  private async deliveryCounts(entries: RawEntry[]): Promise<Map<string, number>> {
    const counts = new Map<string, number>();
    const [first] = entries;
    const last = entries.at(-1);
    if (first === undefined || last === undefined) return counts;
    const reply = await this.options.connections.command.xpending(
      this.streamKey,
      this.options.group,
      first[0],
      last[0],
      entries.length * 2,
    );
    for (const [id, , , count] of pendingRangeSchema.parse(reply)) counts.set(id, count);
    return counts;
  }

  /** Waits `ms`, or less when the consumer stops meanwhile. */
  private pause(ms: number): Promise<void> {
    return Promise.race([sleep(ms), this.stopped]);
  }
}

/** The failure's own code when it carries one (`RECORD_OUT_OF_ORDER`), else HANDLER_FAILED. */
function failureOf(error: unknown): EntryFailure {
  const coded = z.object({ code: z.string() }).safeParse(error);
  return { code: coded.success ? coded.data.code : "HANDLER_FAILED", message: errorMessage(error) };
}
