import type { ModelReply } from "./scenario.js";
import { pieces, sseEvent, type SseEvent } from "./sse.js";

/** Anthropic Messages streaming: message_start, one content block (text or tool_use), message_delta, message_stop. */
export function anthropicEvents(
  reply: Exclude<ModelReply, { kind: "error" }>,
  text: string,
  n: number,
): SseEvent[] {
  const id = `msg_scripted_${n}`;
  const start: SseEvent = {
    event: "message_start",
    delayMs: reply.delayMs,
    data: {
      type: "message_start",
      message: {
        id,
        type: "message",
        role: "assistant",
        model: "scripted-model",
        content: [],
        stop_reason: null,
        stop_sequence: null,
        usage: { input_tokens: 1, output_tokens: 1 },
      },
    },
  };
  const block =
    reply.kind === "text"
      ? [
          sseEvent("content_block_start", { index: 0, content_block: { type: "text", text: "" } }),
          ...pieces(text, reply.chunks).map((piece, index) => ({
            ...sseEvent("content_block_delta", { index: 0, delta: { type: "text_delta", text: piece } }),
            ...(index > 0 ? { delayMs: reply.chunkDelayMs } : {}),
          })),
        ]
      : [
          sseEvent("content_block_start", {
            index: 0,
            content_block: { type: "tool_use", id: `toolu_scripted_${n}`, name: reply.name, input: {} },
          }),
          sseEvent("content_block_delta", {
            index: 0,
            delta: { type: "input_json_delta", partial_json: JSON.stringify(reply.input) },
          }),
        ];
  const stopReason = reply.kind === "text" ? "end_turn" : "tool_use";
  return [
    start,
    ...block,
    sseEvent("content_block_stop", { index: 0 }),
    sseEvent("message_delta", {
      delta: { stop_reason: stopReason, stop_sequence: null },
      usage: { output_tokens: 1 },
    }),
    sseEvent("message_stop", {}),
  ];
}

/** The error body the Anthropic API sends with a 4xx/5xx status. */
export function anthropicError(message: string): unknown {
  return { type: "error", error: { type: "invalid_request_error", message } };
}
