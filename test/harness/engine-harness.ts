import { mkdtempSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterAll, beforeAll } from "vitest";
import { hostServices, type HostedServices } from "../../libs/service/service-host.js";
import { engineRunnerService } from "../../services/engine-runner/definition.js";
import { evidenceExtractorService } from "../../services/evidence-extractor/definition.js";
import { harnessGatewayService } from "../../services/harness-gateway/definition.js";
import { resultProducerService } from "../../services/result-producer/definition.js";
import {
  engineSimAgent,
  loggedInputs,
  writeAgentsFile,
  type SimProtocol,
} from "../engine-runner/agents-file.js";
import { createTestRedis, waitFor, type TestRedis } from "../helpers/test-redis.js";
import { HarnessPeer, MACHINE, harnessEnv } from "./harness-fixture.js";

export interface EngineAgent {
  agentId: string;
  protocol: SimProtocol;
  scenario: string;
}

/** The whole Harness side in one process (gateway, runner, extractor, producer) on real engine-sim processes. */
export interface EngineHarness {
  t: TestRedis;
  harness: HostedServices;
  /** A peer OS connected for `deviceId`, hello done. */
  peer(deviceId: string): Promise<HarnessPeer>;
  /** Every stdin line the agent's engine received, parsed. */
  engineInputs(agentId: string): Record<string, unknown>[];
}

export function useEngineHarness(label: string, agents: EngineAgent[]): EngineHarness {
  const logs = new Map<string, ReturnType<typeof engineSimAgent>>();
  const stack = {
    async peer(deviceId: string) {
      const connected = await HarnessPeer.connect(stack.harness.url, deviceId);
      await connected.hello();
      return connected;
    },
    engineInputs: (agentId: string) => {
      const sim = logs.get(agentId);
      if (!sim) throw new Error(`no engine for ${agentId}`);
      return loggedInputs(sim);
    },
  } as EngineHarness;
  beforeAll(async () => {
    stack.t = createTestRedis(label);
    const workDir = mkdtempSync(join(tmpdir(), `${label}-`));
    for (const agent of agents)
      logs.set(agent.agentId, engineSimAgent({ ...agent, machineId: MACHINE, workDir }));
    const agentsFile = writeAgentsFile(
      workDir,
      [...logs.values()].map((sim) => sim.config),
    );
    stack.harness = await hostServices(
      `${label}-test`,
      [harnessGatewayService, resultProducerService, engineRunnerService, evidenceExtractorService],
      harnessEnv(stack.t, {
        AGENTS_FILE: agentsFile,
        MACHINE_ID: MACHINE,
        // Tests poll receipt.get as a peer would; the connection's rate limit is not what they test.
        RATE_LIMIT_BURST: "1000",
        RATE_LIMIT_PER_SECOND: "1000",
      }),
    );
  }, 180_000);
  afterAll(async () => {
    await stack.harness?.stop();
    await stack.t?.cleanup();
  });
  return stack;
}

type Frame = Record<string, unknown>;

/** The device's receipt for `key` once it matches (polled with receipt.get, as a peer would). */
export async function receiptWhen(
  device: HarnessPeer,
  key: string,
  accept: (receipt: Frame) => boolean,
): Promise<Frame> {
  const answer = await waitFor(
    async () => ((await device.receipt(key)).receipt ?? null) as Frame | null,
    (receipt) => receipt !== null && accept(receipt),
    { timeoutMs: 60_000, intervalMs: 100 },
  );
  if (!answer || !accept(answer)) throw new Error(`receipt ${key} never matched: ${JSON.stringify(answer)}`);
  return answer;
}

/** The idempotency keys a turn.result event names, in order. */
export const resultKeys = (event: Frame) =>
  (((event.payload as Frame).correlation as Frame).inputs as Frame[]).map((input) => input.idempotencyKey);
