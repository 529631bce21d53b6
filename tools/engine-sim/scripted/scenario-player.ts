import type { SimProtocol } from "../args.js";
import {
  codexInputText,
  isClaudeInput,
  isClaudeInterrupt,
  isCodexNotification,
  isCodexRequest,
  record,
  textOf,
} from "../frames.js";
import type { LiveFrame, LiveIo } from "../live-io.js";
import type { PlayableStep, ScenarioRuntime } from "./scenario.js";
import { TemplateScope } from "./template.js";

type Expect = Extract<PlayableStep, { expect: string }>;

/** The generic interpreter of scenario data: no scenario has code of its own. */
export async function playScenarioRuntime(
  runtime: ScenarioRuntime,
  protocol: SimProtocol,
  io: LiveIo,
): Promise<void> {
  const scope = new TemplateScope();
  await playSteps(runtime.steps, scope, protocol, io);
  while (runtime.repeat.length > 0) {
    scope.nextPass();
    await playSteps(runtime.repeat, scope, protocol, io);
  }
}

async function playSteps(
  steps: PlayableStep[],
  scope: TemplateScope,
  protocol: SimProtocol,
  io: LiveIo,
): Promise<void> {
  for (const step of steps) {
    if ("emit" in step) io.emit(scope.render(step.emit));
    else if ("expect" in step) {
      const live = await io.take((frame) => expected(step, protocol, frame));
      if (step.as) scope.bind(step.as, bindingOf(live, protocol));
    } else if ("sleep" in step) await new Promise((resolve) => setTimeout(resolve, step.sleep));
    else if (step.exit.signal) process.kill(process.pid, step.exit.signal as NodeJS.Signals);
    else await io.exit(step.exit.code ?? 0);
  }
}

function expected(step: Expect, protocol: SimProtocol, frame: LiveFrame): boolean {
  if (protocol === "claude-stream-json")
    return step.expect === "input"
      ? isClaudeInput(frame)
      : step.expect === "response"
        ? frame.type === "control_response"
        : step.expect === "interrupt" && isClaudeInterrupt(frame);
  switch (step.expect) {
    case "input":
      return (
        isCodexRequest(frame, step.method) && (frame.method === "turn/start" || frame.method === "turn/steer")
      );
    case "interrupt":
      return isCodexRequest(frame, "turn/interrupt");
    case "request":
      return isCodexRequest(frame, step.method);
    case "notification":
      return isCodexNotification(frame, step.method);
    case "response":
      return frame.id !== undefined && frame.method === undefined;
  }
}

/** The live values a scenario may refer to (`{{A.uuid}}`, `{{A.id}}`, …). */
function bindingOf(frame: LiveFrame, protocol: SimProtocol): Record<string, unknown> {
  if (protocol === "claude-stream-json")
    return {
      uuid: frame.uuid ?? null,
      text: textOf(record(frame.message)?.content) ?? null,
      requestId: frame.request_id ?? null,
      id: frame.request_id ?? frame.uuid ?? null,
      decision: record(record(frame.response)?.response)?.behavior ?? null,
    };
  const params = record(frame.params);
  return {
    id: frame.id ?? null,
    method: frame.method ?? null,
    text: codexInputText(frame) ?? null,
    clientId: params?.clientUserMessageId ?? null,
    threadId: params?.threadId ?? null,
    turnId: params?.turnId ?? params?.expectedTurnId ?? null,
    decision: record(frame.result)?.decision ?? null,
  };
}
