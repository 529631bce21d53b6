import type { RedisClient } from "../redis/redis-client.js";
import type { Keyspace } from "../redis/keyspace.js";
import { execPipeline } from "../redis/pipeline.js";
import { activeDeviceKeys, OsPartitionKeys } from "./os-keys.js";

/**
 * Tells the routers a device is active (its Lamp connected, a run registered, a command queued): adds it to its
 * partition's active set, then wakes the partition's holder, in that order and in one round trip (a pipeline runs
 * in order on one connection; PUBLISH names no key, so on a Cluster it goes with the set's node and still reaches
 * every subscriber). Called after the step that made the device active, so a router that removes an idle device
 * and re-checks it afterwards sees that step or gets this add.
 */
export async function markDeviceActive(
  redis: RedisClient,
  keys: Keyspace,
  partitions: number,
  deviceId: string,
): Promise<void> {
  const partition = OsPartitionKeys.ofDevice(keys, deviceId, partitions);
  await execPipeline(redis.pipeline().sadd(partition.devices, deviceId).publish(partition.wake, deviceId));
}

/** The devices the routers serve now: every partition's active set, sorted. */
export async function activeDevices(
  redis: RedisClient,
  keys: Keyspace,
  partitions: number,
): Promise<string[]> {
  const sets = await Promise.all(activeDeviceKeys(keys, partitions).map((key) => redis.smembers(key)));
  return sets.flat().sort();
}
