import { existsSync, mkdirSync, readFileSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import type { ApprovalPolicy } from "../../libs/contract/engine.js";
import type { RecordedRequest } from "../../tools/model-server/model-server.js";
import { engineBinary, type RealEngine } from "../../tools/real-engines/pins.js";
import { sandboxCommand } from "../../tools/real-engines/sandbox-command.js";
import type { EngineSimAgent } from "../engine-runner/agents-file.js";
import { MACHINE } from "../e2e/stack.js";

export interface RealEngineOptions {
  agentId: string;
  engine: RealEngine;
  /** A file in test/real-engines/model-scenarios (name without .json). */
  modelScenario: string;
  /** The runner's answer to the engine's approval requests. */
  approvals?: ApprovalPolicy;
  codexApprovals?: "never" | "on-request" | "on-failure";
  codexSandbox?: "read-only" | "workspace-write" | "danger-full-access";
  /** Extra CLI arguments, e.g. Claude's --allowedTools. */
  cliArgs?: string[];
}

export interface RealEngineAgent extends EngineSimAgent {
  /** JSONL of every request the CLI made to the scripted model. */
  modelRequests: string;
}

/** True when `npm run engines:install` has put the pinned CLIs in the engines cache. */
export function realEnginesInstalled(): boolean {
  return existsSync(engineBinary("claude")) && existsSync(engineBinary("codex"));
}

/** The real CLI as an engine-runner agent: inside `unshare --net` with the scripted model on its loopback. */
export function realEngineAgent(options: RealEngineOptions): (workDir: string) => RealEngineAgent {
  return (workDir) => {
    const home = join(workDir, `${options.agentId}-home`);
    mkdirSync(home, { recursive: true });
    const inputLog = join(workDir, `${options.agentId}.inputs.ndjson`);
    const modelRequests = join(workDir, `${options.agentId}.model-requests.jsonl`);
    writeFileSync(inputLog, "");
    writeFileSync(modelRequests, "");
    return {
      inputLog,
      modelRequests,
      config: {
        agentId: options.agentId,
        machineId: MACHINE,
        engine: options.engine === "claude" ? "claude-stream-json" : "codex-app-server",
        ...(options.approvals ? { approvals: options.approvals } : {}),
        command: commandLine(
          sandboxCommand({
            engine: options.engine,
            scenario: options.modelScenario,
            record: modelRequests,
            home,
            logInputs: inputLog,
            ...(options.codexApprovals ? { codexApprovals: options.codexApprovals } : {}),
            ...(options.codexSandbox ? { codexSandbox: options.codexSandbox } : {}),
            ...(options.cliArgs ? { cliArgs: options.cliArgs } : {}),
          }),
        ),
      },
    };
  };
}

export function modelRequestsOf(agent: EngineSimAgent): RecordedRequest[] {
  const path = (agent as RealEngineAgent).modelRequests;
  return readFileSync(path, "utf8")
    .split("\n")
    .filter((line) => line !== "")
    .map((line) => JSON.parse(line) as RecordedRequest);
}

const commandLine = ({ command, args }: { command: string; args: string[] }) => [command, ...args];
