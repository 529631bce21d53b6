import type { RedisClient } from "../../libs/redis/redis-client.js";
import type { z } from "zod";
import type { helloResultSchema } from "../../libs/contract/harness-wire.js";
import { errorMessage } from "../../libs/errors/error-message.js";
import type { Logger } from "../../libs/logging/logger.js";
import type { OsDeviceKeys } from "../../libs/os-store/os-keys.js";

/**
 * Records the device's Harness session for operators (`B:harness-session`, read by the console). Best effort: the
 * record only describes, so a failed write is logged and the session goes on.
 */
export class SessionRecord {
  constructor(
    private readonly redis: RedisClient,
    private readonly device: OsDeviceKeys,
    private readonly router: string,
    private readonly log: Logger,
  ) {}

  async opened(hello: z.infer<typeof helloResultSchema>): Promise<void> {
    await this.write({
      state: "open",
      router: this.router,
      transportInstanceId: hello.serverInstanceId,
      machineId: hello.machineId,
      capabilities: JSON.stringify(hello.capabilities),
      resumed: String(hello.resumed),
      openedAt: String(Date.now()),
      closedAt: "",
    });
  }

  async closed(): Promise<void> {
    await this.write({ state: "closed", closedAt: String(Date.now()) });
  }

  private async write(fields: Record<string, string>): Promise<void> {
    const cleared = Object.entries(fields)
      .filter(([, value]) => value === "")
      .map(([field]) => field);
    const set = Object.entries(fields).filter(([, value]) => value !== "");
    try {
      const step = this.redis.multi().hset(this.device.harnessSession, Object.fromEntries(set));
      if (cleared.length > 0) step.hdel(this.device.harnessSession, ...cleared);
      await step.exec();
    } catch (error) {
      this.log.warn({ err: errorMessage(error) }, "harness session record not written");
    }
  }
}
