import type { LiveFrame } from "./live-io.js";

export function record(value: unknown): Record<string, unknown> | undefined {
  return typeof value === "object" && value !== null && !Array.isArray(value)
    ? (value as Record<string, unknown>)
    : undefined;
}

/** Text of a Claude message content (a string, or text blocks) or of Codex input/content items. */
export function textOf(content: unknown): string | undefined {
  if (typeof content === "string") return content;
  if (!Array.isArray(content)) return undefined;
  return content
    .map((block) => record(block))
    .filter((block) => block?.type === "text" && typeof block.text === "string")
    .map((block) => block?.text as string)
    .join("");
}

/** Claude: a stream-json user line the host wrote. */
export function isClaudeInput(frame: LiveFrame): boolean {
  return frame.type === "user";
}

/** Claude: `{"type":"control_request","request":{"subtype":"interrupt"}}`. */
export function isClaudeInterrupt(frame: LiveFrame): boolean {
  return frame.type === "control_request" && record(frame.request)?.subtype === "interrupt";
}

/** Codex: a JSON-RPC request (has id and method), a notification (method only) or a response (id only). */
export function isCodexRequest(frame: LiveFrame, method?: string): boolean {
  return frame.id !== undefined && typeof frame.method === "string" && (!method || frame.method === method);
}

export function isCodexNotification(frame: LiveFrame, method?: string): boolean {
  return frame.id === undefined && typeof frame.method === "string" && (!method || frame.method === method);
}

export function codexInputText(frame: LiveFrame): string | undefined {
  return textOf(record(frame.params)?.input);
}

/** Replaces values deeply: `replace` returns a substitute or undefined to keep (and descend into) the value. */
export function mapDeep(value: unknown, replace: (value: unknown) => unknown): unknown {
  const replaced = replace(value);
  if (replaced !== undefined) return replaced;
  if (Array.isArray(value)) return value.map((item) => mapDeep(item, replace));
  const object = record(value);
  if (!object) return value;
  return Object.fromEntries(Object.entries(object).map(([key, item]) => [key, mapDeep(item, replace)]));
}
