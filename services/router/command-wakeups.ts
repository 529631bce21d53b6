import { OsPartitionKeys } from "../../libs/os-store/os-keys.js";
import type { Keyspace } from "../../libs/redis/keyspace.js";
import type { Logger } from "../../libs/logging/logger.js";
import { errorMessage } from "../../libs/errors/error-message.js";
import type { Subscriber } from "../../libs/redis/subscriber.js";

/** What a partition's holder does with its wake-ups. */
export interface WakeTarget {
  wake(deviceId: string): void;
  /** Wake-ups may have been lost: look at every device again. */
  catchUp(): void;
}

/**
 * The router process's one pub/sub connection: subscribed to the wake-up channel of each partition it holds
 * (`<p>:os:{part:k}:wake`, a deviceId per message), never to a device's. After the connection comes back every
 * partition catches up, so a wake-up lost meanwhile never strands a command.
 */
export class CommandWakeups {
  private readonly targets = new Map<string, WakeTarget>();

  constructor(
    private readonly subscriber: Subscriber,
    private readonly keys: Keyspace,
    private readonly log: Logger,
  ) {
    subscriber.onMessage((channel, deviceId) => this.targets.get(channel)?.wake(deviceId));
    subscriber.onResubscribed(() => {
      for (const target of this.targets.values()) target.catchUp();
    });
  }

  async follow(partition: number, target: WakeTarget): Promise<void> {
    const channel = new OsPartitionKeys(this.keys, partition).wake;
    this.targets.set(channel, target);
    await this.subscriber.subscribe(channel);
  }

  async unfollow(partition: number): Promise<void> {
    const channel = new OsPartitionKeys(this.keys, partition).wake;
    this.targets.delete(channel);
    await this.subscriber.unsubscribe(channel).catch((error: unknown) => {
      this.log.warn({ partition, err: errorMessage(error) }, "wake-up channel not unsubscribed");
    });
  }
}
