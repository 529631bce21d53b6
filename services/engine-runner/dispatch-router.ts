import type { HarnessDispatch } from "../../libs/contract/pipeline-payloads.js";
import type { RunnerMetrics } from "./runner-metrics.js";

export interface HostedAgent {
  start(): Promise<void>;
  isRunning(): boolean;
  deliver(dispatch: HarnessDispatch): Promise<void>;
  stop(): Promise<void>;
}

/**
 * Every runner reads the whole `harness.dispatch` stream in its own group (`engine-runner.<machineId>`), so an
 * entry for an agent it does not host is another machine's business: acked and ignored (counted), never retried.
 */
export class DispatchRouter {
  constructor(
    private readonly machineId: string,
    private readonly agents: ReadonlyMap<string, HostedAgent>,
    private readonly metrics: RunnerMetrics,
  ) {}

  async handle(dispatch: HarnessDispatch): Promise<void> {
    if (dispatch.machineId !== this.machineId) {
      this.metrics.dispatchIgnored.inc({ reason: "other_machine" });
      return;
    }
    const agent = this.agents.get(dispatch.agentId);
    if (!agent) {
      this.metrics.dispatchIgnored.inc({ reason: "agent_not_hosted" });
      return;
    }
    await agent.deliver(dispatch);
  }
}
