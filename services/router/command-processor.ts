import type { RedisClient } from "../../libs/redis/redis-client.js";
import { receiptGetResultSchema, turnSendResultSchema } from "../../libs/contract/harness-wire.js";
import type { Receipt } from "../../libs/contract/receipt.js";
import { STREAM_CATALOG } from "../../libs/contract/catalog.js";
import type { Logger } from "../../libs/logging/logger.js";
import {
  deviceCommandSchema,
  type DeviceCommand,
  type SendReply,
} from "../../libs/contract/device-commands.js";
import { OS_END_REASONS } from "../../libs/contract/run-update.js";
import { runReceipt, type RunRecord } from "../../libs/os-store/run-record.js";
import type { Keyspace } from "../../libs/redis/keyspace.js";
import { errorMessage } from "../../libs/errors/error-message.js";
import { parseEntryPayload, type RawEntry } from "../../libs/streams/stream-entry.js";
import { appendToStream, ensureConsumerGroup } from "../../libs/streams/stream-writer.js";
import type { HarnessLink } from "./harness-link.js";
import type { RouterMetrics } from "./router-metrics.js";
import type { BindOutcome, RouterStore } from "./router-store.js";
import { sleep } from "../../libs/timing/sleep.js";

/** Errors after which the same key may be sent again; any other refusal is final for the run. */
const TRANSIENT_ERRORS = new Set(["BACKPRESSURE", "RATE_LIMITED", "INTERNAL"]);

export interface LiveLink {
  link: HarnessLink;
  transportInstanceId: string;
}

class NotConnected extends Error {}

const COMMANDS_GROUP = STREAM_CATALOG.deviceCommands.consumers.router.group;
const COMMANDS_CONSUMER = STREAM_CATALOG.deviceCommands.reading.consumer;

/**
 * Executes the gateway's commands for one device against the Harness (`B:commands`, group `router`, consumer
 * `owner`): an entry stays pending until its answer is bound, so a lost ack or a crash retries it with the SAME
 * idempotency key (the Harness answers `duplicate`), and a new lease holder inherits what was left pending.
 * It holds no connection of its own: it reads (never blocking) when poked by its partition's wake-up, when the
 * session goes live, and every `catchUpMs` in case a wake-up was lost; each read drains the device's own pending
 * entries, then the new ones.
 */
export class CommandProcessor {
  private stopping = false;
  private loop: Promise<void> | undefined;
  private poked = true;
  /**
   * Entries left pending exist only from before this processor (a crash, the previous lease holder) or after one of
   * its own steps failed; only then does a drain re-read them, so an idle catch-up costs one read.
   */
  private mayHavePending = true;
  private wakeUp: () => void = () => undefined;

  constructor(
    private readonly options: {
      redis: RedisClient;
      keys: Keyspace;
      store: RouterStore;
      live: () => LiveLink | undefined;
      metrics: RouterMetrics;
      log: Logger;
      retryDelayMs: number;
      catchUpMs: number;
      /** Binds a receipt the Harness answered a command with, acking the command's entry in the same step. */
      bindReceipt: (
        receipt: Receipt,
        source: "turn.send",
        answered: { entryId: string; group: string },
      ) => Promise<BindOutcome>;
    },
  ) {}

  async start(): Promise<void> {
    await ensureConsumerGroup(this.options.redis, this.options.store.device.commands, COMMANDS_GROUP);
    this.loop = this.run();
  }

  /** New commands may be queued: read them now. */
  poke(): void {
    this.poked = true;
    this.wakeUp();
  }

  async stop(): Promise<void> {
    this.stopping = true;
    this.wakeUp();
    await this.loop;
  }

  private async run(): Promise<void> {
    while (!this.stopping) {
      try {
        if (!this.options.live()) {
          this.poked = true;
          await sleep(50);
          continue;
        }
        if (!this.poked) await this.pause(this.options.catchUpMs);
        this.poked = false;
        await this.drain();
      } catch (error) {
        if (this.stopping) break;
        if (!(error instanceof NotConnected))
          this.options.log.warn({ err: errorMessage(error) }, "device command failed; retrying");
        this.poked = true;
        this.mayHavePending = true;
        await sleep(this.options.retryDelayMs);
      }
    }
  }

  /** Until a poke (or stop) or `ms` pass. */
  private pause(ms: number): Promise<void> {
    return new Promise((resolve) => {
      const timer = setTimeout(done, ms);
      function done(): void {
        clearTimeout(timer);
        resolve();
      }
      this.wakeUp = done;
    });
  }

  /** Left-over pending entries first (a crash or a lost ack), then everything new, until both are empty. */
  private async drain(): Promise<void> {
    for (const cursor of this.mayHavePending ? ["0", ">"] : [">"]) {
      for (;;) {
        if (this.stopping) return;
        const entries = await this.read(cursor);
        if (entries.length === 0) break;
        for (const [id, fields] of entries) await this.execute(id, fields);
      }
      if (cursor === "0") this.mayHavePending = false;
    }
  }

  private async read(cursor: string): Promise<RawEntry[]> {
    const reply = (await this.options.redis.call(
      "XREADGROUP",
      "GROUP",
      COMMANDS_GROUP,
      COMMANDS_CONSUMER,
      "COUNT",
      16,
      "STREAMS",
      this.options.store.device.commands,
      cursor,
    )) as [string, RawEntry[]][] | null;
    return (reply?.[0]?.[1] ?? []).filter((entry) => entry[1] !== null);
  }

  private async execute(id: string, fields: string[]): Promise<void> {
    const parsed = parseEntryPayload(deviceCommandSchema, fields);
    if (!parsed.ok) this.options.log.error({ id, err: parsed.error }, "malformed device command dropped");
    const acked = parsed.ok && (await this.perform(parsed.value, id));
    if (acked) return;
    const commands = this.options.store.device.commands;
    await this.options.redis.multi().xack(commands, COMMANDS_GROUP, id).xdel(commands, id).exec();
  }

  /** Returns whether the command's entry was acked with the receipt that answered it. */
  private async perform(command: DeviceCommand, entryId: string): Promise<boolean> {
    const run = await this.options.store.run(command.runId);
    if (!run) return false;
    this.options.store.knowRun(run.idempotencyKey, run.runId);
    if (command.kind === "stop") {
      await this.interrupt(run);
      return false;
    }
    const { reply, bind } = await this.send(run);
    // The gateway's wait for the answer and the binding that acks the command go out together.
    await Promise.all([
      appendToStream(
        this.options.redis,
        this.options.keys,
        STREAM_CATALOG.gatewayReplies(command.replyTo),
        reply,
      ),
      bind === undefined
        ? undefined
        : this.options.bindReceipt(bind, "turn.send", { entryId, group: COMMANDS_GROUP }),
    ]);
    return bind !== undefined;
  }

  /** The gateway's answer, and the receipt still to bind (with the command's ack) when the Harness just gave one. */
  private async send(run: RunRecord): Promise<{ reply: SendReply; bind?: Receipt }> {
    const base = { deviceId: run.deviceId, runId: run.runId };
    const known = runReceipt(run) ?? null;
    if (known || run.state !== "pending") return { reply: { ...base, receipt: known } };
    const live = this.requireLive();
    if (run.sentVia !== undefined && run.sentVia !== live.transportInstanceId)
      return this.reconcile(run, live);
    await this.options.store.markSendAttempt(run.runId, live.transportInstanceId);
    const answer = await live.link.request(
      {
        type: "turn.send",
        machineId: run.machineId,
        agentId: run.agentId,
        idempotencyKey: run.idempotencyKey,
        text: run.text,
      },
      turnSendResultSchema,
    );
    this.options.metrics.sends.inc({
      operation: "turn.send",
      answer: answer.ok ? answer.value.status : answer.error.code,
    });
    if (!answer.ok) {
      if (TRANSIENT_ERRORS.has(answer.error.code)) throw new Error(`turn.send: ${answer.error.code}`);
      await this.options.store.markSendFailed(run.runId, answer.error.code);
      return { reply: { ...base, receipt: null, error: answer.error } };
    }
    const { receipt } = answer.value;
    return { reply: { ...base, receipt }, bind: receipt };
  }

  /** The send was first tried on another Harness instance: ask for the receipt, never submit the input again. */
  private async reconcile(run: RunRecord, live: LiveLink): Promise<{ reply: SendReply; bind?: Receipt }> {
    const answer = await live.link.request(
      { type: "receipt.get", idempotencyKey: run.idempotencyKey },
      receiptGetResultSchema,
    );
    const receipt = answer.ok ? answer.value.receipt : null;
    const reply = { deviceId: run.deviceId, runId: run.runId, receipt };
    if (receipt) return { reply, bind: receipt };
    await this.options.store.markSendFailed(run.runId, OS_END_REASONS.instanceChanged);
    return { reply };
  }

  private async interrupt(run: RunRecord): Promise<void> {
    if (run.stopKey === undefined) return;
    const live = this.requireLive();
    const answer = await live.link.request(
      {
        type: "turn.stop",
        machineId: run.machineId,
        agentId: run.agentId,
        idempotencyKey: run.stopKey,
        targetIdempotencyKey: run.idempotencyKey,
      },
      turnSendResultSchema,
    );
    const outcome = answer.ok ? answer.value.status : answer.error.code;
    this.options.metrics.sends.inc({ operation: "turn.stop", answer: outcome });
    this.options.log.info({ runId: run.runId, outcome }, "turn.stop answered");
  }

  private requireLive(): LiveLink {
    const live = this.options.live();
    if (!live) throw new NotConnected("harness not connected");
    return live;
  }
}
