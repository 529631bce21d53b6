import {
  objectField,
  parseFrame,
  stringField,
  type DispatchInput,
  type DispatchStop,
  type EngineSession,
  type PlannedFrame,
} from "./engine-session.js";

/**
 * Claude Code headless stream-json. Our deliveryId is the input line's `uuid` and the interrupt's `request_id`.
 * A turn runs while any input we wrote is unanswered: a main-loop `result` answers the uuids it lists
 * (`user_message_uuids`, else `user_message_uuid`), or the oldest input when an older CLI lists none; background
 * wakes, peer turns and sub-agent results answer nothing; `command_lifecycle` completed/cancelled settles one.
 */
export class ClaudeStreamJsonSession implements EngineSession {
  private readonly unanswered: string[] = [];

  async start(): Promise<void> {}

  observe(line: string): void {
    const frame = parseFrame(line);
    if (!frame) return;
    if (frame.type === "command_lifecycle") {
      const state = stringField(frame, "state");
      if (state === "completed" || state === "cancelled") this.settle(stringField(frame, "command_uuid"));
      return;
    }
    if (frame.type !== "result" || (frame.parent_tool_use_id ?? null) !== null) return;
    const listed = Array.isArray(frame.user_message_uuids)
      ? frame.user_message_uuids.filter((uuid): uuid is string => typeof uuid === "string")
      : [stringField(frame, "user_message_uuid")].filter((uuid): uuid is string => uuid !== undefined);
    if (listed.length > 0) listed.forEach((uuid) => this.settle(uuid));
    else if (objectField(frame, "origin") === undefined) this.unanswered.shift();
  }

  async inputFrame(input: DispatchInput): Promise<PlannedFrame> {
    const mode = this.unanswered.length > 0 ? "native_queue" : "direct";
    this.unanswered.push(input.deliveryId);
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

  private settle(uuid: string | undefined): void {
    const index = uuid === undefined ? -1 : this.unanswered.indexOf(uuid);
    if (index >= 0) this.unanswered.splice(index, 1);
  }
}
