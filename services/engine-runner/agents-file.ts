import { readFileSync } from "node:fs";
import { agentsFileSchema, type AgentConfig } from "../../libs/contract/engine.js";
import { ConfigError } from "../../libs/config/load-config.js";

export interface HostedAgents {
  machineId: string;
  agents: AgentConfig[];
}

/**
 * Reads and validates AGENTS_FILE once at boot. Anything wrong (unreadable, not JSON, schema, machine ambiguity)
 * is one ConfigError naming the file and the first problem, so the process exits 78 before touching anything.
 */
export function loadAgentsFile(path: string, machineId?: string): HostedAgents {
  const fail = (detail: string) => new ConfigError("AGENTS_FILE", `${path}: ${detail}`);
  let text: string;
  try {
    text = readFileSync(path, "utf8");
  } catch (error) {
    throw fail(`cannot read (${(error as NodeJS.ErrnoException).code ?? "error"})`);
  }
  let json: unknown;
  try {
    json = JSON.parse(text);
  } catch {
    throw fail("not valid JSON");
  }
  const parsed = agentsFileSchema.safeParse(json);
  if (!parsed.success) {
    const issue = parsed.error.issues[0];
    throw fail(`[${issue?.path.join(".") ?? ""}] ${issue?.message ?? "invalid"}`);
  }
  const machines = [...new Set(parsed.data.map((agent) => agent.machineId))];
  const machine = machineId ?? machines[0];
  if (machine === undefined) throw fail("lists no agents");
  if (machineId === undefined && machines.length > 1)
    throw fail(`names several machines (${machines.join(", ")}); set MACHINE_ID to pick one`);
  const agents = parsed.data.filter((agent) => agent.machineId === machine);
  if (agents.length === 0) throw fail(`lists no agent for machine '${machine}'`);
  return { machineId: machine, agents };
}
