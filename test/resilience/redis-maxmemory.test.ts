import { Redis } from "ioredis";
import { afterEach, describe, expect, it } from "vitest";
import { PIPELINE_STREAMS } from "../../libs/contract/catalog.js";
import { RedisServerProcess } from "../../libs/redis/redis-server-process.js";
import { newestDeadLetters } from "../../libs/streams/dead-letters.js";
import { E2EStack, MACHINE } from "../e2e/stack.js";
import type { TestLamp } from "../e2e/test-lamp.js";
import { waitFor } from "../helpers/test-redis.js";

const AGENTS = ["claude-a", "claude-b"];
const SQUEEZE_MS = 20_000;

let server: RedisServerProcess | undefined;
let stack: E2EStack | undefined;
let admin: Redis | undefined;
afterEach(async () => {
  admin?.disconnect();
  await stack?.stop();
  await server?.stop();
});

interface RunView {
  state: string;
  reason: string | null;
}

const ended = (view: RunView) =>
  view.state === "resolved" || (view.state === "unknown" && view.reason !== null);

/** One request per agent; those the stack refused while Redis refused writes are counted, not accepted. */
async function askEveryAgent(lamp: TestLamp, refusals: string[]): Promise<string[]> {
  const accepted: string[] = [];
  for (const agentId of AGENTS)
    try {
      accepted.push((await lamp.say({ agentId, machineId: MACHINE, text: `Hello ${agentId}.` })).runId);
    } catch (error) {
      refusals.push(String(error));
    }
  return accepted;
}

describe("Redis at maxmemory (noeviction)", () => {
  it("after 20 s of refused writes every agent answers again within 30 s, every accepted run ends, and nothing is dead-lettered", async () => {
    server = await RedisServerProcess.start({ appendonly: true });
    admin = new Redis(server.url);
    const running = await E2EStack.start({
      label: "maxmemory",
      redisUrl: server.url,
      agents: AGENTS.map((agentId) => ({
        agentId,
        protocol: "claude-stream-json" as const,
        scenario: "claude-answer-each-input",
      })),
    });
    stack = running;
    const lamp = await running.lamp("lamp-maxmemory");
    const refusals: string[] = [];
    const accepted = await askEveryAgent(lamp, refusals);
    expect(refusals).toEqual([]);

    const squeeze = await server.squeezeMemory();
    const squeezeEnds = Date.now() + SQUEEZE_MS;
    while (Date.now() < squeezeEnds) accepted.push(...(await askEveryAgent(lamp, refusals)));
    await squeeze.release();
    // The squeeze bit: Redis refused writes with OOM meanwhile.
    expect(
      Number(/errorstat_OOM:count=(\d+)/.exec(await admin.info("errorstats"))?.[1] ?? 0),
    ).toBeGreaterThan(0);

    const freedAt = Date.now();
    const afterwards = await askEveryAgent(lamp, []);
    expect(afterwards).toHaveLength(AGENTS.length);
    for (const runId of afterwards)
      await lamp.waitForRunUpdate(runId, (update) => update.state === "resolved", 30_000);
    expect(Date.now() - freedAt).toBeLessThan(30_000);

    const views = await Promise.all(
      accepted.map((runId) =>
        waitFor(async () => (await running.api<RunView>("lamp-maxmemory", `/v1/runs/${runId}`)).body, ended, {
          timeoutMs: 30_000,
          intervalMs: 250,
        }),
      ),
    );
    expect(views.filter((view) => !ended(view))).toEqual([]);
    const letters = await Promise.all(
      PIPELINE_STREAMS.map((spec) => newestDeadLetters(running.redis, running.keys, spec.name, 5)),
    );
    expect(letters.flatMap(({ entries }) => entries)).toEqual([]);
  }, 300_000);
});
