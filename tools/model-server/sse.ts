import type { ServerResponse } from "node:http";
import { setTimeout as sleep } from "node:timers/promises";

export type SseEvent = { event: string; data: unknown; delayMs?: number };

/** An event whose data carries its own name as `type`, as both the Anthropic and the OpenAI streams do. */
export function sseEvent(name: string, fields: Record<string, unknown>): SseEvent {
  return { event: name, data: { type: name, ...fields } };
}

/** Writes server-sent events in order, each after its delay; stops quietly if the engine hung up (an interrupt). */
export async function writeEvents(response: ServerResponse, events: SseEvent[]): Promise<void> {
  response.writeHead(200, { "content-type": "text/event-stream", "cache-control": "no-cache" });
  for (const { event, data, delayMs } of events) {
    if (delayMs) await sleep(delayMs);
    if (response.destroyed) return;
    response.write(`event: ${event}\ndata: ${JSON.stringify(data)}\n\n`);
  }
  response.end();
}

/** `text` cut into `count` pieces of about equal length (at least one character each). */
export function pieces(text: string, count: number): string[] {
  const size = Math.max(1, Math.ceil(text.length / count));
  const parts: string[] = [];
  for (let start = 0; start < text.length; start += size) parts.push(text.slice(start, start + size));
  return parts;
}
