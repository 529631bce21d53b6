import type { Redis } from "ioredis";
import type { Logger } from "../../../libs/logging/logger.js";
import type { Keyspace } from "../../../libs/redis/keyspace.js";
import { undispatchedPattern } from "../../../libs/harness-store/harness-keys.js";
import type { ReservationStore } from "./reservation-store.js";

const DEVICE_OF_INDEX = /\{d:([^}]+)\}:undispatched$/;

/**
 * Repairs a crash between reserve and dispatch: reservations still marked undispatched after `minAgeMs` are
 * appended to harness.dispatch now. A rare second append is harmless (the engine-runner dedupes by deliveryId).
 * SCAN covers one node; on Redis Cluster it runs against every primary.
 */
export async function sweepUndispatched(
  redis: Redis,
  keys: Keyspace,
  reservations: ReservationStore,
  minAgeMs: number,
  log: Logger,
): Promise<number> {
  let swept = 0;
  let cursor = "0";
  do {
    const [next, indexes] = await redis.scan(cursor, "MATCH", undispatchedPattern(keys), "COUNT", 500);
    cursor = next;
    for (const index of indexes) {
      const deviceId = DEVICE_OF_INDEX.exec(index)?.[1];
      if (!deviceId) continue;
      const stale = await redis.zrangebyscore(index, "-inf", Date.now() - minAgeMs);
      for (const idempotencyKey of stale) {
        if (await reservations.dispatch(deviceId, idempotencyKey)) swept += 1;
      }
    }
  } while (cursor !== "0");
  if (swept > 0) log.warn({ swept }, "dispatched reservations left undispatched by a crash");
  return swept;
}
