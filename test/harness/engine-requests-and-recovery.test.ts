import { describe, expect, it } from "vitest";
import { receiptWhen, resultKeys, useEngineHarness } from "./engine-harness.js";

/**
 * Issue 12 items 4 and 5 through the real Harness WebSocket, on real engine-sim processes: an echo-less Claude
 * runtime recovers after an ambiguous boundary (the ambiguous inputs end unknown, a later one is answered again),
 * and an engine's approval request is answered by the default deny policy, so the turn ends and is published.
 */
const AGENTS = {
  echoless: "claude-echoless",
  claudePermission: "claude-permission",
  codexApproval: "codex-approval",
} as const;
const stack = useEngineHarness("engine-requests", [
  {
    agentId: AGENTS.echoless,
    protocol: "claude-stream-json",
    scenario: "claude-echoless-recovers-after-ambiguity",
  },
  { agentId: AGENTS.claudePermission, protocol: "claude-stream-json", scenario: "claude-permission-request" },
  { agentId: AGENTS.codexApproval, protocol: "codex-app-server", scenario: "codex-approval-request" },
]);
type Frame = Record<string, unknown>;

describe.concurrent("engine recovery and engine requests, seen by the device", { timeout: 150_000 }, () => {
  it("echo-less Claude: the two inputs of an ambiguous boundary end unknown; a later input is answered by ordinal", async () => {
    const device = await stack.peer("lamp-echoless");
    await device.send("first", "First, without ids", AGENTS.echoless);
    await device.send("second", "Second, without ids", AGENTS.echoless);
    for (const key of ["first", "second"])
      expect(await receiptWhen(device, key, (receipt) => receipt.state === "unknown")).toMatchObject({
        error: { code: "RESULT_EVIDENCE_MISSING" },
      });
    // The third is sent once the engine has ended both earlier turns (the scenario waits for it after them).
    await device.send("third", "Third, after both turns", AGENTS.echoless);
    const [result] = await device.waitForEvents("turn.result", 1, 60_000);
    expect(resultKeys(result as Frame)).toEqual(["third"]);
    expect((result as Frame).payload).toMatchObject({ outcome: "completed", fullText: "THIRD_DONE" });
    expect(await receiptWhen(device, "third", (receipt) => receipt.state === "completed")).toMatchObject({
      error: null,
    });
    expect(device.events("turn.result")).toHaveLength(1);
    await device.close();
  });

  for (const [agentId, decision] of [
    [AGENTS.claudePermission, "deny"],
    [AGENTS.codexApproval, "decline"],
  ] as const)
    it(`${agentId}: the engine's approval request is answered ${decision} by the default policy and the turn is published`, async () => {
      const device = await stack.peer(`lamp-${agentId}`);
      await device.send("ask", "Run the tests", agentId);
      const [result] = await device.waitForEvents("turn.result", 1, 60_000);
      expect(resultKeys(result as Frame)).toEqual(["ask"]);
      expect((result as Frame).payload).toMatchObject({
        outcome: "completed",
        fullText: `DECISION: ${decision}`,
      });
      expect(await receiptWhen(device, "ask", (receipt) => receipt.state === "completed")).toMatchObject({
        error: null,
      });
      const answers = stack
        .engineInputs(agentId)
        .filter((line) => line.type === "control_response" || (line.id === 0 && line.method === undefined));
      expect(answers).toHaveLength(1);
      await device.close();
    });
});
