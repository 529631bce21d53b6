import { STREAM_CATALOG } from "../../libs/contract/catalog.js";
import type { WebSocket } from "ws";

import { errorMessage } from "../../libs/errors/error-message.js";
import type { Logger } from "../../libs/logging/logger.js";
import { markDeviceActive } from "../../libs/os-store/device-activity.js";
import { OsDeviceKeys } from "../../libs/os-store/os-keys.js";
import type { RedisClient } from "../../libs/redis/redis-client.js";
import type { Keyspace } from "../../libs/redis/keyspace.js";
import { appendToStream } from "../../libs/streams/stream-writer.js";
import { sleep } from "../../libs/timing/sleep.js";
import type { LampConnections } from "./lamp-connections.js";

/** First wait after a failed registration step; it doubles up to the cap while the socket stays open. */
const RETRY_FIRST_MS = 100;
const RETRY_CAP_MS = 5_000;

/**
 * Registers a connected Lamp socket, in order: presence (a waiting playback is then sent to this instance, and the
 * device counts as active), un-revoked (its token is newer than any revocation), marked active for the routers,
 * then the `lamp.connected` wake-up for waiting playbacks. A step that fails (Redis slow or away) is retried, with
 * the steps after it, while the socket stays open: a Lamp whose registration failed once would otherwise stay
 * connected with no Harness session and no delivery until it reconnected. A step that succeeded is not repeated.
 */
export async function registerLamp(options: {
  redis: RedisClient;
  keys: Keyspace;
  partitions: number;
  connections: LampConnections;
  instanceId: string;
  log: Logger;
  deviceId: string;
  socket: WebSocket;
  issuedAt: number;
}): Promise<void> {
  const { redis, keys, connections, deviceId, socket, log } = options;
  const steps: (() => Promise<unknown>)[] = [
    () => connections.add(deviceId, socket, options.issuedAt),
    () => redis.del(new OsDeviceKeys(keys, deviceId).sessionRevoked),
    () => markDeviceActive(redis, keys, options.partitions, deviceId),
    () =>
      appendToStream(redis, keys, STREAM_CATALOG.lampEvents, {
        kind: "lamp.connected",
        deviceId,
        gatewayId: options.instanceId,
        at: Date.now(),
      }),
  ];
  let retryMs = RETRY_FIRST_MS;
  for (const step of steps) {
    for (;;) {
      // Checked right before each step: a closed socket is never registered again after its close removed it.
      if (socket.readyState !== socket.OPEN) return;
      try {
        await step();
        break;
      } catch (error) {
        log.warn(
          { deviceId, retryMs, err: errorMessage(error) },
          "lamp connection not fully registered; retrying",
        );
        await sleep(retryMs);
        retryMs = Math.min(retryMs * 2, RETRY_CAP_MS);
      }
    }
  }
}
