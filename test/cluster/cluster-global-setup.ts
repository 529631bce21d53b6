import type { TestProject } from "vitest/node";
import type { ClusterNode } from "../../libs/redis/connections.js";
import { RedisClusterProcess } from "../../libs/redis/redis-cluster-process.js";
import { CLUSTER_MASTERS, CLUSTER_PARTITIONS, clusterStackReplicas } from "./cluster-profile.js";

declare module "vitest" {
  export interface ProvidedContext {
    redisClusterNodes: ClusterNode[];
  }
}

/**
 * The cluster suite's Redis: a fresh three-master Redis Cluster on loopback (redis-server from PATH), shared by every
 * file under its own key prefix and removed after the run.
 */
export default async function setup(project: TestProject): Promise<() => Promise<void>> {
  const cluster = await RedisClusterProcess.start({ masters: CLUSTER_MASTERS });
  project.provide("redisClusterNodes", cluster.nodes);
  project.provide("e2eStackProfile", {
    redisClusterNodes: cluster.nodes,
    partitions: CLUSTER_PARTITIONS,
    replicas: clusterStackReplicas,
  });
  return () => cluster.stop();
}
