import { randomUUID } from "node:crypto";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { voiceRequestResultSchema } from "../../libs/contract/lamp-wire.js";
import { sleep } from "../../libs/timing/sleep.js";
import { AGENT, MACHINE, SingleProcessStack } from "./single-process-stack.js";

/** Longer than the default pong timeout (20 s) plus the ping interval: before the fix every socket died on resume. */
const PAUSE_MS = 25_000;
const SESSION_OPEN = "harness session open";

let stack: SingleProcessStack;
beforeAll(async () => {
  // Leases outlive the pause here: a process away longer than its lease TTL must hand its partitions over (their
  // next holder may already serve them), which closes and resumes the router's sessions by design, not by keepalive.
  stack = await SingleProcessStack.start("pause", {
    ROUTER_LEASE_TTL_MS: String(3 * PAUSE_MS),
    STREAM_LEASE_TTL_MS: String(3 * PAUSE_MS),
  });
}, 120_000);
afterAll(() => stack?.stop());

describe("a paused gateway process (SIGSTOP, a long GC, a throttled container)", () => {
  it("keeps its Lamp sockets and Harness sessions open and answers the voice.request sent during the pause", async () => {
    let lampClosed = false;
    const lamp = await stack.lamp("lamp-paused", { onClose: () => (lampClosed = true) });
    await lamp.say({ agentId: AGENT, machineId: MACHINE, text: "Before the pause." });
    expect(await lamp.waitForUtterances(1)).toHaveLength(1);
    expect(stack.logCount(SESSION_OPEN)).toBe(1);

    process.kill(stack.pid, "SIGSTOP");
    const requestId = randomUUID();
    try {
      lamp.send({
        type: "voice.request",
        requestId,
        agentId: AGENT,
        machineId: MACHINE,
        text: "During the pause.",
        voiceTarget: { id: "target-1" },
        replyRoute: "voice",
      });
      // The fault itself is a pause of this length; nothing is awaited but the clock.
      await sleep(PAUSE_MS);
    } finally {
      process.kill(stack.pid, "SIGCONT");
    }

    const answer = voiceRequestResultSchema.parse(
      await lamp.waitForFrame(
        (frame) => frame.type === "voice.request_result" && frame.requestId === requestId,
      ),
    );
    expect(answer.receipt).not.toBeNull();
    const utterances = await lamp.waitForUtterances(2);
    expect(utterances).toHaveLength(2);
    expect(lampClosed).toBe(false);
    expect(await stack.metric("os_lamp_sockets")).toBe(1);
    expect(await stack.metric("harness_gateway_sessions")).toBe(1);
    expect(stack.logCount(SESSION_OPEN)).toBe(1);
    expect(stack.logCount("stopped answering pings")).toBe(0);
  }, 120_000);
});
