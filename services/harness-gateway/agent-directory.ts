import type { AgentConfig } from "../../libs/contract/engine.js";
import type { HarnessErrorCode } from "../../libs/contract/harness-wire.js";

/** The agents this Harness serves (AGENTS_FILE): a request names an agent and the machine it must run on. */
export class AgentDirectory {
  private readonly byId: Map<string, AgentConfig>;

  constructor(agents: readonly AgentConfig[]) {
    this.byId = new Map(agents.map((agent) => [agent.agentId, agent]));
  }

  /** Undefined when the target is served here; otherwise the error code that refuses it. */
  refusal(agentId: string, machineId: string): HarnessErrorCode | undefined {
    const agent = this.byId.get(agentId);
    if (!agent) return "AGENT_NOT_FOUND";
    if (agent.machineId !== machineId) return "MACHINE_MISMATCH";
    return undefined;
  }
}
