import { readFileSync, writeFileSync } from "node:fs";
import { join, resolve } from "node:path";
import type { AgentConfig } from "../../libs/contract/engine.js";
import { projectRoot } from "../helpers/child-process.js";

export type SimProtocol = "claude-stream-json" | "codex-app-server";

export interface EngineSimAgentOptions {
  agentId: string;
  machineId: string;
  protocol: SimProtocol;
  /** A corpus transcript (`--replay`) or a scenario name/path (`--scenario`); exactly one. */
  replay?: string;
  scenario?: string;
  /** Directory for the agent's state file and input log. */
  workDir: string;
  /** Play the next runtime at each process start (default true; false replays runtime 1 at every start). */
  advanceRuntimes?: boolean;
}

export interface EngineSimAgent {
  config: AgentConfig;
  /** Every stdin line the engine received, across all of its processes (`--log-inputs`). */
  inputLog: string;
}

/** Path of a scripted scenario in test/fixtures/engine-scenarios (name without `.json`), or a path as given. */
export function scenarioPath(nameOrPath: string): string {
  return nameOrPath.endsWith(".json")
    ? resolve(nameOrPath)
    : join(projectRoot, "test", "fixtures", "engine-scenarios", `${nameOrPath}.json`);
}

/** An AGENTS_FILE entry whose engine is `engine-sim` (bin/engine-sim.mjs run by this node), as a user would run it. */
export function engineSimAgent(options: EngineSimAgentOptions): EngineSimAgent {
  const source = options.replay
    ? ["--replay", options.replay]
    : ["--scenario", scenarioPath(options.scenario ?? "")];
  const inputLog = join(options.workDir, `${options.agentId}.inputs.ndjson`);
  writeFileSync(inputLog, "");
  const state =
    options.advanceRuntimes === false
      ? []
      : ["--state", join(options.workDir, `${options.agentId}.state.json`)];
  return {
    config: {
      agentId: options.agentId,
      machineId: options.machineId,
      engine: options.protocol,
      command: [
        process.execPath,
        join(projectRoot, "bin", "engine-sim.mjs"),
        "--protocol",
        options.protocol,
        ...source,
        ...state,
        "--log-inputs",
        inputLog,
      ],
    },
    inputLog,
  };
}

/** Writes the AGENTS_FILE and returns its path. */
export function writeAgentsFile(workDir: string, agents: AgentConfig[]): string {
  const path = join(workDir, "agents.json");
  writeFileSync(path, JSON.stringify(agents, null, 2));
  return path;
}

/** The parsed stdin lines an engine-sim agent received. */
export function loggedInputs(agent: EngineSimAgent): Record<string, unknown>[] {
  return readFileSync(agent.inputLog, "utf8")
    .split("\n")
    .filter((line) => line !== "")
    .map((line) => JSON.parse(line) as Record<string, unknown>);
}
