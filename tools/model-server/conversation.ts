import { z } from "zod";

/** What the scripted model needs to know about a request: the user's texts, in order, and whether a tool ran. */
export interface Conversation {
  userTexts: string[];
  sawToolResult: boolean;
}

/** Engines add their own context as user text (`<system-reminder>`, `<environment_context>`…): not the user's words. */
const isEngineContext = (text: string) => text.trimStart().startsWith("<");

const anthropicBlock = z.looseObject({ type: z.string(), text: z.string().optional() });
const anthropicRequest = z.looseObject({
  messages: z.array(
    z.looseObject({ role: z.string(), content: z.union([z.string(), z.array(anthropicBlock)]) }),
  ),
});

/** Anthropic Messages: user turns' text blocks; `tool_result` blocks are the tool's output coming back. */
export function anthropicConversation(body: unknown): Conversation {
  const request = anthropicRequest.parse(body);
  const userTexts: string[] = [];
  let sawToolResult = false;
  for (const message of request.messages) {
    if (message.role !== "user") continue;
    const blocks =
      typeof message.content === "string" ? [{ type: "text", text: message.content }] : message.content;
    for (const block of blocks) {
      if (block.type === "tool_result") sawToolResult = true;
      if (block.type === "text" && block.text !== undefined && !isEngineContext(block.text))
        userTexts.push(block.text);
    }
  }
  return { userTexts, sawToolResult };
}

const responsesItem = z.looseObject({
  type: z.string().optional(),
  role: z.string().optional(),
  content: z
    .union([z.string(), z.array(z.looseObject({ type: z.string(), text: z.string().optional() }))])
    .optional(),
});
const responsesRequest = z.looseObject({ input: z.union([z.string(), z.array(responsesItem)]) });

/** OpenAI Responses: user message items' input_text; `function_call_output` items are a tool's output. */
export function responsesConversation(body: unknown): Conversation {
  const request = responsesRequest.parse(body);
  if (typeof request.input === "string") return { userTexts: [request.input], sawToolResult: false };
  const userTexts: string[] = [];
  let sawToolResult = false;
  for (const item of request.input) {
    if (item.type === "function_call_output" || item.type === "custom_tool_call_output") sawToolResult = true;
    if (item.role !== "user" || item.content === undefined) continue;
    const parts =
      typeof item.content === "string" ? [{ type: "input_text", text: item.content }] : item.content;
    for (const part of parts)
      if (part.text !== undefined && !isEngineContext(part.text)) userTexts.push(part.text);
  }
  return { userTexts, sawToolResult };
}
