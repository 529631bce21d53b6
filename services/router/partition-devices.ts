import { z } from "zod";
import type { RedisClient } from "../../libs/redis/redis-client.js";
import type { Logger } from "../../libs/logging/logger.js";
import { OsDeviceKeys, OsPartitionKeys } from "../../libs/os-store/os-keys.js";
import type { Keyspace } from "../../libs/redis/keyspace.js";
import { NamedLuaScript } from "../../libs/redis/lua-script.js";
import { errorMessage } from "../../libs/errors/error-message.js";
import { holdLease } from "../../libs/leases/lease-step.js";
import type { PartitionWork } from "../../libs/leases/partition-leases.js";

/** `active` while the router should hold the device's Harness session, false once it may let it go. */
const activityReply = z.object({ active: z.boolean() });
const deviceActivityScript = NamedLuaScript.fromFile<Record<string, never>, typeof activityReply>(
  new URL("./lua/device-activity-1.lua", import.meta.url),
  activityReply,
);

/** How many devices one sweep checks at once (one round trip each, pipelined on the shared connection). */
const SWEEP_BATCH = 500;

/** A device's Harness session as the partition sees it. */
export interface DeviceWork {
  /** New commands may be queued for the device. */
  poke(): void;
  stop(): Promise<void>;
}

interface HeldDevice {
  work: DeviceWork;
  /** When the device was last seen active (epoch ms). */
  activeAt: number;
}

/**
 * The devices of one partition this replica holds: a Harness session for each active device (its partition's
 * active set), opened after claiming the device lease (`B:lease`, which fences the router's writes), and let go,
 * device lease released, once the device has been inactive for `idleGraceMs`. A sweep every `sweepMs` reads the
 * active set and checks each held device; a wake-up (the device-gateway's, after a command or a Lamp connect)
 * pokes the device's session or opens it at once.
 */
export class PartitionDevices implements PartitionWork {
  private readonly held = new Map<string, HeldDevice>();
  /** Sessions still closing, by device: a new one for the same device waits for it (same lease owner). */
  private readonly closing = new Map<string, Promise<void>>();
  private readonly keys: OsPartitionKeys;
  private timer: NodeJS.Timeout | undefined;
  private opening: Promise<void> = Promise.resolve();
  private stopped = false;

  constructor(
    private readonly options: {
      redis: RedisClient;
      keys: Keyspace;
      partition: number;
      owner: string;
      idleGraceMs: number;
      sweepMs: number;
      log: Logger;
      open: (deviceId: string) => Promise<DeviceWork>;
      changed: () => void;
    },
  ) {
    this.keys = new OsPartitionKeys(options.keys, options.partition);
  }

  get size(): number {
    return this.held.size;
  }

  start(): void {
    this.schedule(0);
  }

  /** A wake-up for the device: poke its session, or open one if the device is (now) in the active set. */
  wake(deviceId: string): void {
    const held = this.held.get(deviceId);
    if (held) {
      held.activeAt = Date.now();
      return held.work.poke();
    }
    void this.serially(async () => {
      if ((await this.options.redis.sismember(this.keys.devices, deviceId)) === 1) await this.open(deviceId);
    });
  }

  /** Catch-up after wake-ups may have been lost (the subscriber reconnected): every session reads its commands. */
  catchUp(): void {
    for (const held of this.held.values()) held.work.poke();
    void this.serially(() => this.sweep());
  }

  async stop(graceful: boolean): Promise<void> {
    this.stopped = true;
    clearTimeout(this.timer);
    // The sessions end at once; one a sweep was opening meanwhile ends once the sweep is through.
    await this.closeAll(graceful);
    await this.serially(async () => undefined);
    await this.closeAll(graceful);
  }

  private async closeAll(release: boolean): Promise<void> {
    await Promise.all([...this.held.keys()].map((deviceId) => this.close(deviceId, release)));
    await Promise.all(this.closing.values());
  }

  private schedule(delayMs: number): void {
    this.timer = setTimeout(() => {
      void this.serially(() => this.sweep()).finally(() => {
        if (!this.stopped) this.schedule(this.options.sweepMs);
      });
    }, delayMs);
  }

  /** Opens and sweeps run one at a time, so a device is never opened twice. */
  private serially(task: () => Promise<void>): Promise<void> {
    this.opening = this.opening.then(task).catch((error: unknown) => {
      this.options.log.warn(
        { partition: this.options.partition, err: errorMessage(error) },
        "partition devices not updated",
      );
    });
    return this.opening;
  }

  private async sweep(): Promise<void> {
    if (this.stopped) return;
    const members = await this.options.redis.smembers(this.keys.devices);
    for (const deviceId of members) if (!this.held.has(deviceId)) await this.open(deviceId);
    await this.releaseIdle();
  }

  private async open(deviceId: string): Promise<void> {
    if (this.stopped || this.held.has(deviceId)) return;
    await this.closing.get(deviceId);
    const { redis, keys, owner, log } = this.options;
    await redis.set(new OsDeviceKeys(keys, deviceId).lease, owner);
    const work = await this.options.open(deviceId);
    this.held.set(deviceId, { work, activeAt: Date.now() });
    log.info({ deviceId, partition: this.options.partition }, "device session held");
    this.options.changed();
  }

  /**
   * Lets go of devices inactive for the grace period: out of the active set first, then checked once more, so a
   * device that became active meanwhile (its gateway step ran before the re-check, or its add comes after the
   * removal) is kept or re-added.
   */
  private async releaseIdle(): Promise<void> {
    const now = Date.now();
    const deviceIds = [...this.held.keys()];
    for (let start = 0; start < deviceIds.length; start += SWEEP_BATCH) {
      const batch = deviceIds.slice(start, start + SWEEP_BATCH);
      const active = await Promise.all(batch.map((deviceId) => this.isActive(deviceId)));
      const idle: string[] = [];
      for (const [index, deviceId] of batch.entries()) {
        const held = this.held.get(deviceId);
        if (!held) continue;
        if (active[index]) held.activeAt = now;
        else if (now - held.activeAt >= this.options.idleGraceMs) idle.push(deviceId);
      }
      // Devices are independent: a fleet that left at once is let go a batch at a time, not one by one.
      await Promise.all(idle.map((deviceId) => this.releaseIfStillIdle(deviceId)));
    }
  }

  private async releaseIfStillIdle(deviceId: string): Promise<void> {
    const { redis } = this.options;
    await redis.srem(this.keys.devices, deviceId);
    if (await this.isActive(deviceId)) {
      await redis.sadd(this.keys.devices, deviceId);
      const held = this.held.get(deviceId);
      if (held) held.activeAt = Date.now();
      return;
    }
    this.options.log.info({ deviceId, partition: this.options.partition }, "idle device session released");
    await this.close(deviceId, true);
  }

  private async isActive(deviceId: string): Promise<boolean> {
    const device = new OsDeviceKeys(this.options.keys, deviceId);
    return (await deviceActivityScript.run(this.options.redis, [device.base], {})).active;
  }

  /** Ends the session; `release` gives the device lease up too (a lost partition's next holder takes it over). */
  private async close(deviceId: string, release: boolean): Promise<void> {
    const held = this.held.get(deviceId);
    if (!held) return;
    this.held.delete(deviceId);
    const { redis, keys, owner } = this.options;
    const closed = held.work
      .stop()
      .then(async () => {
        if (release) await holdLease(redis, new OsDeviceKeys(keys, deviceId).lease, owner, 0, "release");
      })
      .catch((error: unknown) =>
        this.options.log.warn({ deviceId, err: errorMessage(error) }, "device session not closed cleanly"),
      )
      .finally(() => this.closing.delete(deviceId));
    this.closing.set(deviceId, closed);
    this.options.changed();
    await closed;
  }
}
