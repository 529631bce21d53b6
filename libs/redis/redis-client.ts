import type { Cluster, Redis } from "ioredis";

/**
 * A connection to the deployment's Redis: a single server (`Redis`) or a Redis Cluster (`Cluster`). Both speak the
 * same commands; everything that only issues commands takes this type, so the same code runs on either.
 */
export type RedisClient = Redis | Cluster;
