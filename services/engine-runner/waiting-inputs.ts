import type { RedisClient } from "../../libs/redis/redis-client.js";
import { dispatchInputSchema } from "../../libs/contract/pipeline-payloads.js";
import type { DispatchInput } from "./protocols/engine-session.js";

export interface WaitingInput {
  /** The stored bytes, to remove exactly this entry. */
  raw: string;
  input: DispatchInput;
}

/**
 * An agent's inputs waiting in the runner for another device's turn to end, in arrival order. Durable (a list under
 * the agent's slot, written in one MULTI with the input's delivery marker), so a runner restart writes them to the
 * next runtime; bounded by the reservations that can be open (RECEIPT_CAPACITY per device).
 */
export class WaitingInputs {
  constructor(
    private readonly redis: RedisClient,
    private readonly key: string,
  ) {}

  async count(): Promise<number> {
    return this.redis.llen(this.key);
  }

  async list(): Promise<WaitingInput[]> {
    const raws = await this.redis.lrange(this.key, 0, -1);
    return raws.map((raw) => ({ raw, input: dispatchInputSchema.parse(JSON.parse(raw)) }));
  }

  /** Appends the input and sets its delivery marker to `waiting` in one step. */
  async add(input: DispatchInput, markerKey: string, markerTtlSeconds: number): Promise<void> {
    await this.redis
      .multi()
      .rpush(this.key, JSON.stringify(input))
      .set(markerKey, "waiting", "EX", markerTtlSeconds)
      .exec();
  }

  async remove(entry: WaitingInput): Promise<void> {
    await this.redis.lrem(this.key, 1, entry.raw);
  }
}
