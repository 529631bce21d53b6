import { appendFileSync } from "node:fs";
import { createServer, type IncomingMessage, type Server, type ServerResponse } from "node:http";
import type { AddressInfo } from "node:net";
import { setTimeout as sleep } from "node:timers/promises";
import { anthropicError, anthropicEvents } from "./anthropic-stream.js";
import { GivenInputs } from "./given-inputs.js";
import { anthropicConversation, responsesConversation, type Conversation } from "./conversation.js";
import { responsesError, responsesEvents } from "./responses-stream.js";
import type { ModelReply, ModelScenario } from "./scenario.js";
import { writeEvents } from "./sse.js";

/** One line of the request record: what the engine asked and what the script answered. */
export interface RecordedRequest {
  n: number;
  at: number;
  api: "anthropic" | "responses";
  userTexts: string[];
  sawToolResult: boolean;
  reply: ModelReply["kind"];
  text?: string;
}

const API = {
  anthropic: { conversation: anthropicConversation, events: anthropicEvents, error: anthropicError },
  responses: { conversation: responsesConversation, events: responsesEvents, error: responsesError },
} as const;

/** A held reply goes anyway after this long: the test waiting for it then fails on what the model saw. */
const AWAIT_INPUT_LIMIT_MS = 60_000;

const DEFAULT_REPLY: ModelReply = {
  kind: "text",
  text: "ANSWER: {{last}}",
  delayMs: 0,
  chunks: 1,
  chunkDelayMs: 0,
};

/**
 * A scripted model on loopback speaking the two APIs the engines call: `POST /v1/messages` (Anthropic, Claude
 * Code) and `POST /v1/responses` (OpenAI, Codex), always streaming. Each request is appended to `recordPath`.
 */
export class ScriptedModelServer {
  /** What the CLI was given on stdin: the sandbox relays it, and a reply with `awaitInput` waits on it. */
  readonly inputs = new GivenInputs();
  private readonly used = new Set<number>();
  private count = 0;
  private server: Server | undefined;

  constructor(
    private readonly scenario: ModelScenario,
    private readonly recordPath: string,
  ) {}

  async listen(port: number, host = "127.0.0.1"): Promise<number> {
    const server = createServer((request, response) => void this.handle(request, response));
    this.server = server;
    await new Promise<void>((resolve) => server.listen(port, host, resolve));
    return (server.address() as AddressInfo).port;
  }

  close(): Promise<void> {
    return new Promise((resolve) => (this.server ? this.server.close(() => resolve()) : resolve()));
  }

  private async handle(request: IncomingMessage, response: ServerResponse): Promise<void> {
    const path = (request.url ?? "").split("?")[0];
    const api = path === "/v1/messages" ? "anthropic" : path === "/v1/responses" ? "responses" : undefined;
    const body = await readBody(request);
    if (request.method !== "POST" || api === undefined || body === undefined) {
      response
        .writeHead(404, { "content-type": "application/json" })
        .end(JSON.stringify({ error: "not found" }));
      return;
    }
    const conversation = API[api].conversation(body);
    const reply = this.nextReply(conversation);
    const n = ++this.count;
    const text =
      reply.kind === "tool"
        ? undefined
        : render(reply.kind === "text" ? reply.text : reply.message, conversation);
    const recorded: RecordedRequest = {
      n,
      at: Date.now(),
      api,
      ...conversation,
      reply: reply.kind,
      ...(text ? { text } : {}),
    };
    appendFileSync(this.recordPath, `${JSON.stringify(recorded)}\n`);
    if (reply.kind === "error") {
      await sleep(reply.delayMs);
      response.writeHead(reply.status, { "content-type": "application/json" });
      response.end(JSON.stringify(API[api].error(text ?? reply.message)));
      return;
    }
    if (reply.kind === "tool" && reply.awaitInput)
      await this.inputs.until(reply.awaitInput, AWAIT_INPUT_LIMIT_MS);
    await writeEvents(response, API[api].events(reply, text ?? "", n));
  }

  private nextReply(conversation: Conversation): ModelReply {
    const last = conversation.userTexts.at(-1) ?? "";
    const index = this.scenario.replies.findIndex(
      (scripted, position) =>
        !this.used.has(position) &&
        (scripted.when === undefined || last.includes(scripted.when)) &&
        (!scripted.afterTool || conversation.sawToolResult),
    );
    if (index < 0) return DEFAULT_REPLY;
    if (!this.scenario.replies[index]?.always) this.used.add(index);
    return this.scenario.replies[index]?.reply ?? DEFAULT_REPLY;
  }
}

function render(template: string, conversation: Conversation): string {
  return template
    .replaceAll("{{last}}", conversation.userTexts.at(-1) ?? "")
    .replaceAll("{{users}}", conversation.userTexts.join(" | "));
}

async function readBody(request: IncomingMessage): Promise<unknown> {
  const chunks: Buffer[] = [];
  for await (const chunk of request) chunks.push(chunk as Buffer);
  try {
    return JSON.parse(Buffer.concat(chunks).toString("utf8"));
  } catch {
    return undefined;
  }
}
