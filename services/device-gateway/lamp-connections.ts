import type { RedisClient } from "../../libs/redis/redis-client.js";
import type { WebSocket } from "ws";
import { z } from "zod";
import { issuedBeforeRevocation } from "../../libs/auth/tokens.js";
import type { Logger } from "../../libs/logging/logger.js";
import type { Keyspace } from "../../libs/redis/keyspace.js";
import { NamedLuaScript } from "../../libs/redis/lua-script.js";
import { errorMessage } from "../../libs/errors/error-message.js";
import { lampRevokedAt } from "../../libs/os-store/lamp-revocations.js";
import { OsDeviceKeys } from "../../libs/os-store/os-keys.js";

/** `held` or `released` when the presence key was set or removed, `not_ours` when another instance holds it. */
const presenceReplySchema = z.object({ outcome: z.enum(["held", "released", "not_ours"]) });
const presenceScript = NamedLuaScript.fromFile<
  { gatewayInstanceId: string; ttlMs: number; mode: "claim" | "refresh" | "release" },
  typeof presenceReplySchema
>(new URL("./lua/refresh-presence-1.lua", import.meta.url), presenceReplySchema);

/** Close code for a socket whose token was revoked (as on the Harness transport). */
const REVOKED_CLOSE_CODE = 4001;
/** Close code for a device's socket beyond LAMP_MAX_SOCKETS_PER_DEVICE on one instance (the newest is refused). */
export const TOO_MANY_SOCKETS_CLOSE_CODE = 4003;
/** Devices refreshed or checked at once (one round trip each, pipelined on the shared connection). */
const DEVICE_BATCH = 500;

/**
 * The Lamp sockets this gateway instance holds, by device, with the issue time of the token each authenticated
 * with, and the presence key that tells the playback worker which instance to deliver to: set on connect,
 * refreshed every third of its TTL, removed on the last close (only while it still names this instance). A socket
 * whose token the device's revocation covers is closed on the revocation notice, and every socket is checked again
 * when the notice subscription comes back (a notice is missed only while it is away).
 */
export class LampConnections {
  /** deviceId → socket → token `iat` (seconds). */
  private readonly sockets = new Map<string, Map<WebSocket, number>>();
  private readonly refresher: NodeJS.Timeout;

  constructor(
    private readonly options: {
      redis: RedisClient;
      keys: Keyspace;
      instanceId: string;
      presenceTtlMs: number;
      log: Logger;
    },
  ) {
    this.refresher = setInterval(() => void this.refreshAll(), Math.floor(options.presenceTtlMs / 3));
    this.refresher.unref();
  }

  async add(deviceId: string, socket: WebSocket, tokenIssuedAt: number): Promise<void> {
    const sockets = this.sockets.get(deviceId) ?? new Map<WebSocket, number>();
    sockets.set(socket, tokenIssuedAt);
    this.sockets.set(deviceId, sockets);
    await this.presence(deviceId, "claim");
  }

  async remove(deviceId: string, socket: WebSocket): Promise<void> {
    const sockets = this.sockets.get(deviceId);
    sockets?.delete(socket);
    if (sockets && sockets.size > 0) return;
    this.sockets.delete(deviceId);
    await this.presence(deviceId, "release");
  }

  /** The device's sockets held by this instance (a socket is held from its connect until its close). */
  count(deviceId: string): number {
    return this.sockets.get(deviceId)?.size ?? 0;
  }

  /** Writes a frame to every open socket of the device on this instance; returns how many got it. */
  send(deviceId: string, frame: unknown): number {
    let sent = 0;
    for (const socket of this.sockets.get(deviceId)?.keys() ?? []) {
      if (socket.readyState !== socket.OPEN) continue;
      socket.send(JSON.stringify(frame));
      sent += 1;
    }
    return sent;
  }

  async close(): Promise<void> {
    clearInterval(this.refresher);
    for (const [deviceId, sockets] of this.sockets) {
      for (const socket of sockets.keys()) socket.close(1001, "gateway shutting down");
      await this.presence(deviceId, "release");
    }
    this.sockets.clear();
  }

  /** Closes the device's sockets whose token was issued before its last revocation. */
  async enforceRevocation(deviceId: string): Promise<void> {
    const sockets = this.sockets.get(deviceId);
    if (!sockets) return;
    const revokedAt = await lampRevokedAt(this.options.redis, this.options.keys, deviceId);
    for (const [socket, issuedAt] of sockets)
      if (issuedBeforeRevocation(issuedAt, revokedAt)) socket.close(REVOKED_CLOSE_CODE, "revoked");
  }

  /** Checks every connected device against its revocation (after the revocation subscription was away). */
  async enforceAllRevocations(): Promise<void> {
    await this.forEachDevice((deviceId) =>
      this.enforceRevocation(deviceId).catch((error: unknown) =>
        this.options.log.warn({ deviceId, err: errorMessage(error) }, "revocation not checked"),
      ),
    );
  }

  private refreshAll(): Promise<void> {
    return this.forEachDevice((deviceId) => this.presence(deviceId, "refresh"));
  }

  /** Runs `step` for every connected device, a batch at a time (pipelined on the shared connection). */
  private async forEachDevice(step: (deviceId: string) => Promise<void>): Promise<void> {
    const deviceIds = [...this.sockets.keys()];
    for (let start = 0; start < deviceIds.length; start += DEVICE_BATCH)
      await Promise.all(deviceIds.slice(start, start + DEVICE_BATCH).map(step));
  }

  private async presence(deviceId: string, mode: "claim" | "refresh" | "release"): Promise<void> {
    const { redis, keys, instanceId, presenceTtlMs } = this.options;
    try {
      await presenceScript.run(redis, [new OsDeviceKeys(keys, deviceId).lampPresence], {
        gatewayInstanceId: instanceId,
        ttlMs: presenceTtlMs,
        mode,
      });
    } catch (error) {
      this.options.log.warn({ deviceId, mode, err: errorMessage(error) }, "lamp presence not updated");
    }
  }
}
