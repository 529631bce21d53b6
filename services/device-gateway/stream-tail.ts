import type { Redis } from "ioredis";
import type { z } from "zod";
import type { Logger } from "../../libs/logging/logger.js";
import { errorMessage } from "../../libs/errors/error-message.js";
import { PAYLOAD_FIELD } from "../../libs/streams/stream-writer.js";

type RawEntry = [id: string, fields: string[]];

/**
 * Follows one instance-private stream without a consumer group, from `$` at start (what was written for a previous
 * incarnation of this instance has no socket or waiter left), trimming what it has read.
 */
export class StreamTail<S extends z.ZodType> {
  private stopping = false;
  private loop: Promise<void> | undefined;
  private lastBeatAt = Date.now();

  constructor(
    private readonly options: {
      reader: Redis;
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
    let lastId = "$";
    while (!this.stopping) {
      this.lastBeatAt = Date.now();
      try {
        const reply = (await this.options.reader.call(
          "XREAD",
          "COUNT",
          100,
          "BLOCK",
          1_000,
          "STREAMS",
          this.options.streamKey,
          lastId,
        )) as [string, RawEntry[]][] | null;
        for (const [id, fields] of reply?.[0]?.[1] ?? []) {
          lastId = id;
          this.deliverEntry(id, fields);
        }
        if (lastId !== "$") await this.options.reader.xtrim(this.options.streamKey, "MINID", lastId);
      } catch (error) {
        if (this.stopping) return;
        this.options.log.warn({ err: errorMessage(error), stream: this.options.streamKey }, "tail failed");
        await new Promise((resolve) => setTimeout(resolve, 200));
      }
    }
  }

  private deliverEntry(id: string, fields: string[]): void {
    const index = fields.indexOf(PAYLOAD_FIELD);
    const parsed = this.options.schema.safeParse(JSON.parse(fields[index + 1] ?? "null"));
    if (parsed.success) this.options.deliver(parsed.data);
    else this.options.log.error({ id, stream: this.options.streamKey }, "malformed entry skipped");
  }
}
