import type { RedisClient } from "../redis/redis-client.js";
import type { z } from "zod";
import { errorMessage } from "../errors/error-message.js";
import type { Logger } from "../logging/logger.js";
import { sleep } from "../timing/sleep.js";
import { parseEntryPayload, type RawEntry } from "./stream-entry.js";

const READ_COUNT = 100;
const BLOCK_MS = 1_000;
const RETRY_DELAY_MS = 200;
/** What was read is trimmed at most this often: one XTRIM a second under load, none while nothing comes. */
const TRIM_INTERVAL_MS = 1_000;

/**
 * Follows one instance-private stream without a consumer group, from `$` at start (what was written for a previous
 * incarnation of the instance has nobody left to act on it), trimming what it has read. Each valid payload goes
 * to `deliver`; a malformed entry is logged and skipped.
 */
export class StreamTail<S extends z.ZodType> {
  private stopping = false;
  private loop: Promise<void> | undefined;
  private lastBeatAt = Date.now();

  constructor(
    private readonly options: {
      reader: RedisClient;
      streamKey: string;
      schema: S;
      log: Logger;
      deliver: (payload: z.infer<S>) => void;
    },
  ) {}

  start(): void {
    this.loop = this.run();
  }

  isAlive(now = Date.now()): boolean {
    return this.loop !== undefined && now - this.lastBeatAt < 10_000;
  }

  async stop(): Promise<void> {
    this.stopping = true;
    this.options.reader.disconnect();
    await this.loop;
  }

  private async run(): Promise<void> {
    const { reader, streamKey, log } = this.options;
    let lastId = "$";
    let trimmedTo = lastId;
    let nextTrimAt = 0;
    while (!this.stopping) {
      this.lastBeatAt = Date.now();
      try {
        const reply = (await reader.call(
          "XREAD",
          "COUNT",
          READ_COUNT,
          "BLOCK",
          BLOCK_MS,
          "STREAMS",
          streamKey,
          lastId,
        )) as [string, RawEntry[]][] | null;
        for (const [id, fields] of reply?.[0]?.[1] ?? []) {
          lastId = id;
          this.deliverEntry(id, fields);
        }
        if (lastId !== trimmedTo && Date.now() >= nextTrimAt) {
          await reader.xtrim(streamKey, "MINID", lastId);
          trimmedTo = lastId;
          nextTrimAt = Date.now() + TRIM_INTERVAL_MS;
        }
      } catch (error) {
        if (this.stopping) return;
        log.warn({ err: errorMessage(error), stream: streamKey }, "tail failed");
        await sleep(RETRY_DELAY_MS);
      }
    }
  }

  private deliverEntry(id: string, fields: string[]): void {
    const parsed = parseEntryPayload(this.options.schema, fields);
    if (parsed.ok) this.options.deliver(parsed.value);
    else
      this.options.log.error(
        { id, stream: this.options.streamKey, err: parsed.error },
        "malformed entry skipped",
      );
  }
}
