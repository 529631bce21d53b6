import { copyFileSync, mkdirSync, readFileSync, writeFileSync } from "node:fs";
import { dirname, join, resolve } from "node:path";
import { fileURLToPath } from "node:url";
import type { AgentConfig } from "../../libs/contract/engine.js";
import type { SimProtocol } from "../engine-sim/args.js";

export const DEMO_MACHINE = "local";

const projectRoot = resolve(dirname(fileURLToPath(import.meta.url)), "../..");
const FIXTURES = join(projectRoot, "test", "fixtures", "engine-scenarios");

/** One engine-sim agent per story step: a shipped scenario, its test answers reworded for a listener. */
interface DemoAgent {
  agentId: string;
  protocol: SimProtocol;
  scenario: string;
  answers: Record<string, string>;
}

export const DEMO_AGENTS = {
  answer: {
    agentId: "claude-answer",
    protocol: "claude-stream-json",
    scenario: "claude-answer-each-input",
    answers: {
      "ANSWER: {{A.text}}": "You asked: {{A.text}} Olympus Mons, about twenty two kilometres high.",
    },
  },
  steer: {
    agentId: "claude-steer",
    protocol: "claude-stream-json",
    scenario: "claude-steer-folded-at-tool-boundary",
    answers: { "Both requests handled: FOLDED_AB": "The house plan is ready, and the roof is red." },
  },
  queued: {
    agentId: "claude-queued",
    protocol: "claude-stream-json",
    scenario: "claude-queued-to-next-turn",
    answers: {
      FIRST_DONE: "A table for two is booked at eight.",
      SECOND_DONE: "A taxi will pick you up at half past seven.",
    },
  },
  echoless: {
    agentId: "claude-echoless",
    protocol: "claude-stream-json",
    scenario: "e2e-claude-echoless-two-inputs",
    answers: { FIRST_DONE: "The lights are off.", SECOND_DONE: "The heating is down." },
  },
  failing: {
    agentId: "codex-failing",
    protocol: "codex-app-server",
    scenario: "codex-failed-turn",
    answers: {},
  },
  lostAck: {
    agentId: "codex-answer",
    protocol: "codex-app-server",
    scenario: "codex-answer-each-input",
    answers: { "ANSWER: {{A.text}}": "Your parcel arrives tomorrow before noon." },
  },
} as const satisfies Record<string, DemoAgent>;

function reword(value: unknown, answers: Record<string, string>): unknown {
  if (typeof value === "string") return answers[value] ?? value;
  if (Array.isArray(value)) return value.map((item) => reword(item, answers));
  if (value && typeof value === "object")
    return Object.fromEntries(Object.entries(value).map(([key, item]) => [key, reword(item, answers)]));
  return value;
}

/** Included files are named relative to the scenario, so they go beside the reworded copy unchanged. */
function includesOf(value: unknown): string[] {
  if (Array.isArray(value)) return value.flatMap(includesOf);
  if (!value || typeof value !== "object") return [];
  const include = (value as { include?: unknown }).include;
  return [...(typeof include === "string" ? [include] : []), ...Object.values(value).flatMap(includesOf)];
}

function writeScenario(agent: DemoAgent, dir: string): string {
  const scenario: unknown = JSON.parse(readFileSync(join(FIXTURES, `${agent.scenario}.json`), "utf8"));
  for (const include of includesOf(scenario)) copyFileSync(join(FIXTURES, include), join(dir, include));
  const file = join(dir, `${agent.scenario}.json`);
  writeFileSync(file, `${JSON.stringify(reword(scenario, agent.answers), null, 2)}\n`);
  return file;
}

/** Writes the story's scenarios and the AGENTS_FILE naming them into `dir`; returns the AGENTS_FILE. */
export function writeDemoAgents(dir: string): string {
  const scenarios = join(dir, "scenarios");
  mkdirSync(scenarios, { recursive: true });
  const agents: AgentConfig[] = Object.values(DEMO_AGENTS).map((agent) => ({
    agentId: agent.agentId,
    machineId: DEMO_MACHINE,
    engine: agent.protocol,
    command: [
      process.execPath,
      join(projectRoot, "bin", "engine-sim.mjs"),
      "--protocol",
      agent.protocol,
      "--scenario",
      writeScenario(agent, scenarios),
    ],
  }));
  const file = join(dir, "agents.json");
  writeFileSync(file, `${JSON.stringify(agents, null, 2)}\n`);
  return file;
}
