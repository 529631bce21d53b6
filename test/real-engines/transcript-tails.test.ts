import { writeFileSync } from "node:fs";
import { join } from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { DeviceProbe } from "../e2e/acceptance/acceptance-kit.js";
import { E2EStack, MACHINE } from "../e2e/stack.js";
import type { EngineSimAgent } from "../engine-runner/agents-file.js";
import { realEnginesInstalled } from "./real-engine-agent.js";
import { Typist } from "./typist.js";

/**
 * Issue 17: the transcript-tail engines following the files the real CLIs write. The engine runs "elsewhere" (here:
 * a typist drives the real CLI in its sandbox, typing each input the runner hands over); the runner only follows
 * the session file — Claude Code's transcript JSONL, Codex's rollout JSONL — and the OS speaks what it proves.
 */
const installed = realEnginesInstalled();
if (!installed && process.env.CI) throw new Error("real engine CLIs missing: run npm run engines:install");

const CLAUDE = "claude-tail";
const CODEX = "codex-tail";
let stack: E2EStack;
const typists = new Map<string, Typist>();
let codexLink = "";

function tailAgent(
  agentId: string,
  engine: "claude-transcript" | "codex-rollout",
  path: string,
  workDir: string,
): EngineSimAgent {
  const inputLog = join(workDir, `${agentId}.inputs.ndjson`);
  writeFileSync(inputLog, "");
  return { inputLog, config: { agentId, machineId: MACHINE, engine, path } };
}

beforeAll(async () => {
  if (!installed) return;
  stack = await E2EStack.start({
    label: "real-tails",
    startTimeoutMs: 180_000,
    // The typist reads the runner's hand-overs from engine.records as history; consumed entries are trimmed every
    // STREAM_TRIM_INTERVAL_MS, which on a slow machine came between the first hand-over and the second.
    env: { STREAM_TRIM_INTERVAL_MS: "3600000" },
    agents: [],
    engines: [
      (workDir) => {
        const { typist, transcript } = Typist.claude(
          join(workDir, "claude-tail-home"),
          "claude-steer-into-tool-turn",
          ["--allowedTools", "Bash(sleep:*)"],
        );
        typists.set(CLAUDE, typist);
        return tailAgent(CLAUDE, "claude-transcript", transcript, workDir);
      },
      (workDir) => {
        codexLink = join(workDir, "codex-rollout.jsonl");
        return tailAgent(CODEX, "codex-rollout", codexLink, workDir);
      },
    ],
  });
  typists.set(
    CODEX,
    await Typist.codex(join(stack.workDir, "codex-tail-home"), "codex-steer-into-tool-turn", codexLink),
  );
}, 300_000);
afterAll(async () => {
  for (const typist of typists.values()) typist.stop();
  await stack?.stop();
});

describe
  .skipIf(!installed)
  .concurrent("transcript-tail agents on the files the real CLIs write", { timeout: 240_000 }, () => {
    for (const agentId of [CLAUDE, CODEX])
      it(`${agentId}: A starts a tool-use turn, B typed into it: one result for both, spoken once`, async () => {
        const typist = typists.get(agentId) as Typist;
        const lamp = await stack.lamp(`lamp-${agentId}`);
        const probe = new DeviceProbe(stack, `lamp-${agentId}`);
        const a = await lamp.say({ agentId, machineId: MACHINE, text: "Run the check." });
        await typist.typeHandedOver(stack.t.redis, stack.t.keys, agentId, 1);
        // B is typed once the tool runs, so the CLI takes it into the running turn.
        await typist.frame((frame) =>
          typist.engine === "claude"
            ? frame.type === "assistant" && JSON.stringify(frame).includes('"tool_use"')
            : frame.method === "item/started" && JSON.stringify(frame).includes('"commandExecution"'),
        );
        const b = await lamp.say({ agentId, machineId: MACHINE, text: "Also say FOLDED." });
        await typist.typeHandedOver(stack.t.redis, stack.t.keys, agentId, 2);
        const [runA, runB] = await Promise.all(
          [a, b].map((said) => probe.runUntil(said.runId, (run) => run.state !== "pending", 120_000)),
        );
        await probe.settled();
        expect(runA).toMatchObject({ state: "resolved", outcome: "completed", resultId: runB?.resultId });
        expect(runB).toMatchObject({ state: "resolved", outcome: "completed" });
        const result = await probe.result(runB?.resultId ?? "");
        expect(result?.members.map((member) => member.runId).sort()).toEqual(
          [runA?.runId, runB?.runId].sort(),
        );
        expect(result?.fullText).toMatch(/^MERGED: Run the check\. \| (.|\n)*Also say FOLDED\./);
        await lamp.waitForUtterances(1, 30_000);
        expect(lamp.utterances).toHaveLength(1);
      });
  });
