import type { StackProfile } from "../e2e/stack.js";

/** Masters of every Redis Cluster a cluster stack runs on (Redis Cluster's minimum). */
export const CLUSTER_MASTERS = 3;

/** STREAM_PARTITIONS of a cluster stack: partitions spread over the three masters and two routers. */
export const CLUSTER_PARTITIONS = 3;

/**
 * How a cluster stack (the cluster suite's, `npm run chaos -- --cluster`) runs its services: two replicas of every
 * consumer group's service and of the router and the device-gateway. The engine-runner stays one per machine (it
 * owns the machine's engine processes) and so does the harness-gateway (the routers' HARNESS_URL names one).
 */
export const clusterStackReplicas: NonNullable<StackProfile["replicas"]> = {
  "evidence-extractor": 2,
  "result-producer": 2,
  "run-resolver": 2,
  "tts-dispatcher": 2,
  router: 2,
  "device-gateway": 2,
};
