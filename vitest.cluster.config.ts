import { defineConfig } from "vitest/config";
import base from "./vitest.config.js";

/**
 * The joint acceptance subset the cluster suite runs (issue 18): merged group spoken once, a queued B stays pending,
 * wrong owner rejected, replay/resync dedupe, cancel. The acceptance files run unchanged (test/cluster imports them;
 * the global setup's stack profile puts their stacks on the cluster with replicas); these name the tests kept.
 */
const JOINT_SUBSET = [
  "A then steering B: one proven merged result resolves A/B and speaks once",
  "Claude queues B but result covers only A: B remains pending until consumed and completed",
  "Wrong key, deliveryId, agent, owner, or instance: no partial application or fallback",
  "a cancel of an older member does not suppress",
  "a cancel that interrupts the engine",
  "duplicated and reordered Harness events",
  "the Harness transport instance changes",
  "a voice.request resent after its voice.request_result was lost",
];
const ACCEPTANCE_SUITES = [
  "seed 000 joint acceptance",
  "Duplicate/reordered events, lost acknowledgment, reconnect, and restart",
];
const escape = (text: string) => text.replace(/[.*+?^${}()|[\]\\/]/g, "\\$&");

/** `npm run test:cluster`: the suites that run the system on a real three-master Redis Cluster (test/cluster). */
export default defineConfig({
  test: {
    ...base.test,
    include: ["test/cluster/**/*.test.ts"],
    exclude: ["**/node_modules/**"],
    globalSetup: ["test/cluster/cluster-global-setup.ts"],
    // Every cluster test outside the acceptance suites, and the subset within them.
    testNamePattern: new RegExp(
      `^(?!${ACCEPTANCE_SUITES.map(escape).join("|")})|${JOINT_SUBSET.map(escape).join("|")}`,
    ),
    // Each file runs a stack with two replicas of most services: one at a time on a small machine.
    fileParallelism: false,
    maxWorkers: 1,
  },
});
