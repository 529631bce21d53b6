import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { E2EStack, MACHINE } from "./stack.js";

let stack: E2EStack;
beforeAll(async () => {
  stack = await E2EStack.start({
    label: "smoke",
    agents: [{ agentId: "claude-1", protocol: "claude-stream-json", scenario: "claude-answer-each-input" }],
  });
}, 120_000);
afterAll(() => stack?.stop());

describe("the whole system, one process per service", () => {
  it("a voice request to a Claude agent is answered once, spoken once, and its run resolved", async () => {
    const lamp = await stack.lamp("lamp-smoke");
    const run = await lamp.say({ agentId: "claude-1", machineId: MACHINE, text: "Say hello." });
    const [utterance] = await lamp.waitForUtterances(1);
    expect(utterance?.text).toBeTruthy();
    const view = await stack.api<{ state: string; resultId: string }>("lamp-smoke", `/v1/runs/${run.runId}`);
    expect(view.body).toMatchObject({ state: "resolved", resultId: utterance?.resultId });
    expect(stack.engineInputs("claude-1").filter((line) => line.type === "user")).toHaveLength(1);
  });
});
