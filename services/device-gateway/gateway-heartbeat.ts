import type { RedisClient } from "../../libs/redis/redis-client.js";
import type { Logger } from "../../libs/logging/logger.js";
import type { Keyspace } from "../../libs/redis/keyspace.js";
import { errorMessage } from "../../libs/errors/error-message.js";

/**
 * Tells the playback worker this gateway instance is alive: a key with a TTL of three beats, set before the first
 * Lamp can connect and deleted on a clean stop. After a SIGKILL it expires within three beats, and the worker stops
 * sending into this instance's delivery stream although Lamp presence keys still name it.
 */
export class GatewayHeartbeat {
  private timer: NodeJS.Timeout | undefined;
  /** The key's value: when this process started beating (constant, so only the TTL moves). */
  private readonly since = String(Date.now());

  constructor(
    private readonly options: {
      redis: RedisClient;
      keys: Keyspace;
      instanceId: string;
      intervalMs: number;
      log: Logger;
    },
  ) {}

  private get key(): string {
    return this.options.keys.lampGatewayAlive(this.options.instanceId);
  }

  async start(): Promise<void> {
    await this.beat();
    this.timer = setInterval(() => {
      this.beat().catch((error: unknown) =>
        this.options.log.warn({ err: errorMessage(error) }, "gateway heartbeat not written"),
      );
    }, this.options.intervalMs);
    this.timer.unref();
  }

  async stop(): Promise<void> {
    clearInterval(this.timer);
    await this.options.redis.del(this.key);
  }

  private async beat(): Promise<void> {
    await this.options.redis.set(this.key, this.since, "PX", this.options.intervalMs * 3);
  }
}
