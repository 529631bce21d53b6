import type { RedisClient } from "../redis/redis-client.js";
import { z } from "zod";
import type { Keyspace } from "../redis/keyspace.js";
import { resultKeyOf } from "../os-store/os-keys.js";

/** A mark lives as long as a playback of its result could still start for the first time. */
const MARK_TTL_SECONDS = 24 * 3600;

const markSchema = z.coerce.number().int().positive();

/**
 * When the engine's completion record of a result was received, kept beside the pipeline for one measurement only:
 * the end-to-end latency from that record to the result's `playback.start`. The Harness writes it once per result
 * identity (`<prefix>:metrics:completion:<serverInstanceId>|<resultId>`, SET NX with a TTL); the OS reads it when it
 * sends the playback. Nothing decides on it: a missing mark (another Redis, expired) only means no observation.
 */
export class CompletionMarks {
  constructor(
    private readonly redis: RedisClient,
    private readonly keys: Keyspace,
  ) {}

  async record(serverInstanceId: string, resultId: string, completionRecordAt: number): Promise<void> {
    await this.redis.set(
      this.key(resultKeyOf(serverInstanceId, resultId)),
      completionRecordAt,
      "EX",
      MARK_TTL_SECONDS,
      "NX",
    );
  }

  /**
   * The completion record's time of the result named by its OS result key, if still known; reading it takes it
   * (only a result's first playback.start is measured), so a mark lives only until its result is first sent.
   */
  async takeCompletedAt(resultKey: string): Promise<number | undefined> {
    const value = await this.redis.getdel(this.key(resultKey));
    const parsed = markSchema.safeParse(value);
    return parsed.success ? parsed.data : undefined;
  }

  private key(resultKey: string): string {
    return `${this.keys.prefix}:metrics:completion:${resultKey}`;
  }
}
