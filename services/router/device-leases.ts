import type { Redis } from "ioredis";
import { z } from "zod";
import type { Logger } from "../../libs/logging/logger.js";
import { knownDevicesKey, OsDeviceKeys } from "../../libs/os-store/os-keys.js";
import type { Keyspace } from "../../libs/redis/keyspace.js";
import { LuaScript } from "../../libs/redis/lua-script.js";
import { errorMessage } from "../../libs/errors/error-message.js";

/** 1 while the lease is (still) ours after the step, 0 when another replica holds it. */
const holdLease = LuaScript.fromFile(
  new URL("./lua/hold-lease-1.lua", import.meta.url),
  z.union([z.literal(0), z.literal(1)]),
);

export interface DeviceOwnership {
  stop(): Promise<void>;
}

/**
 * Shares devices between router replicas: each known device's session runs on the replica holding its lease
 * (`B:lease`, SET NX PX, renewed while held). A replica that dies stops renewing, and after the TTL another one
 * takes the device over; a replica that fails to renew drops the session at once.
 */
export class DeviceLeases {
  private readonly held = new Map<string, DeviceOwnership>();
  private timer: NodeJS.Timeout | undefined;
  private ticking: Promise<void> = Promise.resolve();
  private stopped = false;
  private lastRoundAt = Date.now();

  constructor(
    private readonly options: {
      redis: Redis;
      keys: Keyspace;
      owner: string;
      ttlMs: number;
      log: Logger;
      own: (deviceId: string) => Promise<DeviceOwnership>;
      changed: (count: number) => void;
    },
  ) {}

  get intervalMs(): number {
    return Math.max(Math.min(Math.floor(this.options.ttlMs / 3), 1_000), 50);
  }

  start(): void {
    this.schedule(0);
  }

  /** True while lease rounds keep running (a stuck round would stop renewals and hand devices away). */
  isAlive(now = Date.now()): boolean {
    return now - this.lastRoundAt < this.intervalMs * 3 + 5_000;
  }

  async stop(): Promise<void> {
    this.stopped = true;
    clearTimeout(this.timer);
    await this.ticking;
    for (const [deviceId, ownership] of this.held) {
      await ownership.stop();
      await this.lease(deviceId, "release").catch(() => 0);
    }
    this.held.clear();
  }

  private schedule(delayMs: number): void {
    this.timer = setTimeout(() => {
      this.ticking = this.tick().finally(() => {
        if (!this.stopped) this.schedule(this.intervalMs);
      });
    }, delayMs);
  }

  private async tick(): Promise<void> {
    this.lastRoundAt = Date.now();
    try {
      const devices = await this.options.redis.smembers(knownDevicesKey(this.options.keys));
      for (const deviceId of devices) {
        if (this.stopped) return;
        await this.keep(deviceId);
      }
    } catch (error) {
      this.options.log.warn({ err: errorMessage(error) }, "lease round failed");
    }
    this.options.changed(this.held.size);
  }

  private async keep(deviceId: string): Promise<void> {
    const ownership = this.held.get(deviceId);
    if (ownership) {
      if ((await this.lease(deviceId, "renew")) === 1) return;
      this.held.delete(deviceId);
      this.options.log.warn({ deviceId }, "device lease lost; session dropped");
      await ownership.stop();
      return;
    }
    if ((await this.lease(deviceId, "acquire")) !== 1) return;
    this.options.log.info({ deviceId }, "device lease acquired");
    this.held.set(deviceId, await this.options.own(deviceId));
  }

  private async lease(deviceId: string, mode: "acquire" | "renew" | "release"): Promise<0 | 1> {
    const key = new OsDeviceKeys(this.options.keys, deviceId).lease;
    const { redis, owner, ttlMs } = this.options;
    return holdLease.run(redis, [key], [owner, ttlMs, mode]);
  }
}
