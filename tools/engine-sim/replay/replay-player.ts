import type { LiveIo } from "../live-io.js";
import type { ReplayProtocol } from "./replay-protocol.js";
import type { ReplayStep } from "./transcript.js";

/**
 * Plays one recorded runtime in order: an outbound record waits for its live counterpart on stdin, an inbound
 * record is printed with the live ids bound so far, `runtime_exit` ends the process with the recorded status.
 */
export async function playRecordedRuntime(
  steps: ReplayStep[],
  protocol: ReplayProtocol,
  io: LiveIo,
): Promise<void> {
  for (const step of steps) {
    if (step.type === "emit_inbound") io.emit(protocol.substitute(step.frame));
    else if (step.type === "expect_outbound") {
      const expectation = protocol.expectation(step.frame);
      if (!expectation) continue;
      const live = await io.take(expectation.matches);
      expectation.matched(live).forEach((frame) => io.emit(frame));
    } else await io.exit(step.status === undefined || step.status === "success" ? 0 : 1);
  }
}
