import type { ModelReply } from "./scenario.js";
import { pieces, sseEvent, type SseEvent } from "./sse.js";

/** OpenAI Responses streaming: response.created, one output item (message or function_call), response.completed. */
export function responsesEvents(
  reply: Exclude<ModelReply, { kind: "error" }>,
  text: string,
  n: number,
): SseEvent[] {
  const responseId = `resp_scripted_${n}`;
  const itemId = `item_scripted_${n}`;
  const item =
    reply.kind === "text"
      ? {
          type: "message",
          id: itemId,
          status: "completed",
          role: "assistant",
          content: [{ type: "output_text", text, annotations: [] }],
        }
      : {
          type: "function_call",
          id: itemId,
          call_id: `call_scripted_${n}`,
          name: reply.name,
          arguments: JSON.stringify(reply.input),
          status: "completed",
        };
  const added =
    reply.kind === "text"
      ? { ...item, status: "in_progress", content: [] }
      : { ...item, status: "in_progress", arguments: "" };
  const deltas =
    reply.kind === "text"
      ? pieces(text, reply.chunks).map((piece, index) => ({
          ...sseEvent("response.output_text.delta", {
            item_id: itemId,
            output_index: 0,
            content_index: 0,
            delta: piece,
          }),
          ...(index > 0 ? { delayMs: reply.chunkDelayMs } : {}),
        }))
      : [
          sseEvent("response.function_call_arguments.delta", {
            item_id: itemId,
            output_index: 0,
            delta: JSON.stringify(reply.input),
          }),
        ];
  const usage = {
    input_tokens: 1,
    input_tokens_details: { cached_tokens: 0 },
    output_tokens: 1,
    output_tokens_details: { reasoning_tokens: 0 },
    total_tokens: 2,
  };
  return [
    {
      ...sseEvent("response.created", {
        response: { id: responseId, object: "response", status: "in_progress", output: [] },
      }),
      delayMs: reply.delayMs,
    },
    sseEvent("response.output_item.added", { output_index: 0, item: added }),
    ...deltas,
    sseEvent("response.output_item.done", { output_index: 0, item }),
    sseEvent("response.completed", {
      response: { id: responseId, object: "response", status: "completed", output: [item], usage },
    }),
  ];
}

/** The error body the OpenAI API sends with a 4xx/5xx status. */
export function responsesError(message: string): unknown {
  return { error: { message, type: "invalid_request_error", code: null, param: null } };
}
