import type { Redis } from "ioredis";
import type { WebSocket } from "ws";
import type { Logger } from "../../libs/logging/logger.js";
import type { Keyspace } from "../../libs/redis/keyspace.js";
import { LuaScript } from "../../libs/redis/lua-script.js";
import { errorMessage } from "../../libs/streams/stream-consumer.js";

const presenceScript = LuaScript.fromFile(new URL("./lua/refresh-presence-1.lua", import.meta.url));

/**
 * The Lamp sockets this gateway instance holds, by device, and the presence key that tells the playback worker
 * which instance to deliver to: set on connect, refreshed every third of its TTL, removed on the last close
 * (only while it still names this instance).
 */
export class LampConnections {
  private readonly sockets = new Map<string, Set<WebSocket>>();
  private readonly refresher: NodeJS.Timeout;

  constructor(
    private readonly options: {
      redis: Redis;
      keys: Keyspace;
      instanceId: string;
      presenceTtlMs: number;
      log: Logger;
    },
  ) {
    this.refresher = setInterval(() => void this.refreshAll(), Math.floor(options.presenceTtlMs / 3));
    this.refresher.unref();
  }

  async add(deviceId: string, socket: WebSocket): Promise<void> {
    const set = this.sockets.get(deviceId) ?? new Set<WebSocket>();
    set.add(socket);
    this.sockets.set(deviceId, set);
    await this.presence(deviceId, "claim");
  }

  async remove(deviceId: string, socket: WebSocket): Promise<void> {
    const set = this.sockets.get(deviceId);
    set?.delete(socket);
    if (set && set.size > 0) return;
    this.sockets.delete(deviceId);
    await this.presence(deviceId, "release");
  }

  /** Writes a frame to every open socket of the device on this instance; returns how many got it. */
  send(deviceId: string, frame: unknown): number {
    let sent = 0;
    for (const socket of this.sockets.get(deviceId) ?? []) {
      if (socket.readyState !== socket.OPEN) continue;
      socket.send(JSON.stringify(frame));
      sent += 1;
    }
    return sent;
  }

  async close(): Promise<void> {
    clearInterval(this.refresher);
    for (const [deviceId, set] of this.sockets) {
      for (const socket of set) socket.close(1001, "gateway shutting down");
      await this.presence(deviceId, "release");
    }
    this.sockets.clear();
  }

  private async refreshAll(): Promise<void> {
    for (const deviceId of this.sockets.keys()) await this.presence(deviceId, "refresh");
  }

  private async presence(deviceId: string, mode: "claim" | "refresh" | "release"): Promise<void> {
    const { redis, keys, instanceId, presenceTtlMs } = this.options;
    try {
      await presenceScript.run(redis, [keys.lampPresence(deviceId)], [instanceId, presenceTtlMs, mode]);
    } catch (error) {
      this.options.log.warn({ deviceId, mode, err: errorMessage(error) }, "lamp presence not updated");
    }
  }
}
