import { asFrame, parseFrame, strings, text } from "../../../libs/contract/engine-frame.js";
import type { ApprovalPolicy } from "../../../libs/contract/engine.js";
import { answerClaudeRequest, type EngineRequestAnswer } from "./engine-requests.js";
import {
  runningInput,
  type DispatchInput,
  type DispatchStop,
  type EngineSession,
  type PlannedFrame,
  type RunningInput,
  type SessionHooks,
} from "./engine-session.js";

/**
 * Claude Code headless stream-json. Our deliveryId is the input line's `uuid` and the interrupt's `request_id`.
 * A turn runs while any input we wrote is unanswered (the CLI folds or merges queued inputs into the running or the
 * next turn): a main-loop `result` answers the uuids it lists (`user_message_uuids`, else `user_message_uuid`), or
 * the oldest input when an older CLI lists none; background wakes, peer turns and sub-agent results answer nothing;
 * `command_lifecycle` completed/cancelled settles one. When the last one is answered the turn has ended. A
 * `control_request` from the CLI (a permission prompt) is answered at once by the agent's approval policy.
 */
export class ClaudeStreamJsonSession implements EngineSession {
  private readonly unanswered: RunningInput[] = [];
  /** Our uuids the CLI has started (lifecycle `started`, the `isReplay` echo, or written while it was idle). */
  private readonly started = new Set<string>();

  constructor(
    private readonly hooks: SessionHooks,
    private readonly approvals: ApprovalPolicy,
  ) {}

  async start(): Promise<void> {}

  observe(line: string): void {
    const frame = parseFrame(line);
    if (!frame) return;
    const answer = answerClaudeRequest(frame, this.approvals);
    if (answer) return this.answer(answer);
    if (frame.type === "command_lifecycle") {
      const state = text(frame.state);
      if (state === "started") this.markStarted(text(frame.command_uuid));
      if (state === "completed" || state === "cancelled") this.settle([text(frame.command_uuid)]);
      return;
    }
    if (frame.type === "user" && frame.isReplay === true) return this.markStarted(text(frame.uuid));
    if (frame.type !== "result" || (frame.parent_tool_use_id ?? null) !== null) return;
    const single = text(frame.user_message_uuid);
    const listed = strings(frame.user_message_uuids) ?? (single === undefined ? [] : [single]);
    if (listed.length > 0) this.settle(listed);
    else if (asFrame(frame.origin) === undefined) this.settle([this.unanswered[0]?.deliveryId]);
  }

  async inputFrame(input: DispatchInput): Promise<PlannedFrame> {
    const mode = this.unanswered.length > 0 ? "native_queue" : "direct";
    this.unanswered.push(runningInput(input));
    if (mode === "direct") this.started.add(input.deliveryId);
    const raw = JSON.stringify({
      type: "user",
      message: { role: "user", content: input.text },
      parent_tool_use_id: null,
      uuid: input.deliveryId,
    });
    return { raw, mode };
  }

  stopFrame(stop: DispatchStop): PlannedFrame {
    const raw = JSON.stringify({
      type: "control_request",
      request_id: stop.deliveryId,
      request: { subtype: "interrupt" },
    });
    return { raw, mode: "direct" };
  }

  runningInputs(): readonly RunningInput[] {
    return this.unanswered;
  }

  consumedInputs(): readonly RunningInput[] {
    return this.unanswered.filter((input) => this.started.has(input.deliveryId));
  }

  private markStarted(uuid: string | undefined): void {
    if (uuid !== undefined && this.unanswered.some((input) => input.deliveryId === uuid))
      this.started.add(uuid);
  }

  private settle(uuids: (string | undefined)[]): void {
    const before = this.unanswered.length;
    for (const uuid of uuids) {
      const index = this.unanswered.findIndex((input) => input.deliveryId === uuid);
      if (index >= 0) this.unanswered.splice(index, 1);
      if (uuid !== undefined) this.started.delete(uuid);
    }
    if (before > 0 && this.unanswered.length === 0) this.hooks.turnEnded();
  }

  private answer(answer: EngineRequestAnswer): void {
    void this.hooks.transmit(answer.raw).then(() => this.hooks.requestAnswered(answer));
  }
}
