import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { E2EStack, MACHINE } from "../e2e/stack.js";
import { scanKeys } from "../helpers/scan-keys.js";
import { waitFor } from "../helpers/test-redis.js";

/**
 * Issue 39 item 3: every key the system writes has an end. The whole stack (each service its own process) serves
 * every kind of record a Lamp can cause — an answered request, a steered pair answered by one group result, "say
 * that again", a cancel, a request for an agent that does not exist, a Lamp that goes away — with every retention
 * at its smallest; once the Lamps are gone and retention has passed, the keyspace holds only the records that are
 * bounded by something other than age, each named below with its bound (docs/architecture.md, key tables).
 */
const RETENTION_MS = 60_000;
const SLOW = "claude-slow";
const PLAIN = "claude-plain";
const DEVICE = "lamp-retention";

/**
 * Keys that outlive retention by design, each with what bounds it; any other key left must carry a TTL. Per-device
 * singletons are bounded by the fleet: one each per device, whatever it did.
 */
const BOUNDED_OTHERWISE: Array<{ pattern: RegExp; bound: string }> = [
  { pattern: /:h:instance$/, bound: "one per deployment" },
  {
    pattern: /:stream:\{[a-z._]+:\d+\}$/,
    bound: "pipeline streams: trimmed once every group is past an entry",
  },
  { pattern: /:stream-readers:/, bound: "one zset of live replicas per in-order group" },
  { pattern: /:os:router-replicas$/, bound: "live router replicas, pruned by heartbeat" },
  { pattern: /\{[^}]*:bull\}/, bound: "BullMQ: its meta keys, the newest 1,000 completed jobs" },
  {
    pattern: /:os:\{d:[^}]+\}:(run-updates|commands|cursor|harness-session)$/,
    bound: "one per device: its update log's id counter, its command stream, its Harness resume point",
  },
  { pattern: /:h:\{d:[^}]+\}:(event-log|event-seq)$/, bound: "one per device: its event log's id counter" },
  { pattern: /:ev:\{a:[^}]+\}:(runtimes|runner:runtime)$/, bound: "one per agent: its open runtimes" },
];

let stack: E2EStack;
beforeAll(async () => {
  stack = await E2EStack.start({
    label: "every-record-ends",
    agents: [
      { agentId: PLAIN, protocol: "claude-stream-json", scenario: "claude-answer-each-input" },
      { agentId: SLOW, protocol: "claude-stream-json", scenario: "e2e-claude-slow-answer" },
    ],
    env: {
      RESULT_RETENTION_MS: String(RETENTION_MS),
      RECEIPT_RETENTION_SECONDS: "1",
      EVENT_RETENTION_SECONDS: "1",
      RESULT_RETENTION_SECONDS: "1",
      EVIDENCE_BINDING_RETENTION_MS: String(RETENTION_MS),
      DELIVERY_MARKER_TTL_SECONDS: String(RETENTION_MS / 1000),
      RETENTION_SWEEP_INTERVAL_MS: "500",
      VOICE_TARGET_TTL_MS: "5000",
      RUN_DEADLINE_GRACE_MS: "0",
      RUN_DEADLINE_SWEEP_MS: "500",
      ROUTER_IDLE_GRACE_MS: "1000",
    },
  });
}, 120_000);
afterAll(() => stack?.stop());

/** Keys without an end: no TTL, not bounded otherwise, and not an open runtime's evidence state. */
async function unbounded(): Promise<string[]> {
  const left: string[] = [];
  for (const key of await scanKeys(stack.redis, `${stack.keys.prefix}:*`)) {
    if (BOUNDED_OTHERWISE.some(({ pattern }) => pattern.test(key))) continue;
    if ((await stack.redis.pttl(key)) >= 0) continue;
    const runtime = /^(.*:ev:\{a:[^}]+\}):rt:(.+)$/.exec(key);
    if (runtime && (await stack.redis.sismember(`${runtime[1]}:runtimes`, runtime[2] ?? "")) === 1) continue;
    left.push(`${key} (${await stack.redis.type(key)})`);
  }
  return left.sort();
}

describe("every record has an end", () => {
  it(
    "after retention, nothing a Lamp caused is left but what is bounded otherwise",
    async () => {
      const lamp = await stack.lamp(DEVICE);
      const answered = await lamp.say({ agentId: PLAIN, machineId: MACHINE, text: "Say hello." });
      const [utterance] = await lamp.waitForUtterances(1);
      expect(utterance).toBeDefined();
      const repeat = await lamp.repeat(utterance?.resultId ?? "");
      expect(repeat).not.toHaveProperty("error");
      await lamp.waitForUtterances(2);
      const cancelled = await lamp.say({ agentId: SLOW, machineId: MACHINE, text: "Refactor the parser." });
      expect((await lamp.cancel(cancelled.runId)).runId).toBe(cancelled.runId);
      await expect(lamp.say({ agentId: "nosuch", machineId: MACHINE, text: "Hello?" })).rejects.toThrow();
      await lamp.waitForRunUpdate(answered.runId, (update) => update.state === "resolved");
      lamp.close();

      expect((await unbounded()).length).toBeGreaterThan(10);
      const left = await waitFor(unbounded, (keys) => keys.length === 0, {
        timeoutMs: 2 * RETENTION_MS,
        intervalMs: 1_000,
      });
      expect(left).toEqual([]);
    },
    3 * RETENTION_MS + 60_000,
  );
});
