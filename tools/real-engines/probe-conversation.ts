import { spawn } from "node:child_process";
import { mkdtempSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { createInterface } from "node:readline";
import type { RealEngine } from "./pins.js";
import { sandboxCommand } from "./sandbox-command.js";

/** The ids (Claude uuid, Codex clientUserMessageId) and texts the probe gives its two inputs. */
export const PROBE_INPUTS = {
  A: { claude: "11111111-1111-4111-8111-111111111111", codex: "probe-a", text: "Run the check." },
  B: { claude: "22222222-2222-4222-8222-222222222222", codex: "probe-b", text: "Also say FOLDED." },
} as const;

/** One line of a conversation with an engine: what we wrote to it (`out`) or what it printed (`in`). */
export interface ConversationLine {
  dir: "in" | "out";
  frame: Record<string, unknown>;
}

type Frame = Record<string, unknown>;
type Write = (frame: Frame) => void;

interface Conversation {
  start(): void;
  /** Reacts to a frame; true once the conversation is over. */
  next(frame: Frame): boolean;
}

/**
 * One fixed conversation with a real CLI in its sandbox — a tool-use turn (A) with a second input written while
 * the tool runs (B) — returning every line both ways, in order. The same conversation against two versions shows
 * how their wire differs; recorded once (`npm run engines:record`) it is a fixture of the project.
 */
export async function probeConversation(engine: RealEngine, version: string): Promise<ConversationLine[]> {
  const home = mkdtempSync(join(tmpdir(), `probe-${engine}-${version}-`));
  const { command, args } = sandboxCommand({
    engine,
    engineVersion: version,
    scenario: engine === "claude" ? "claude-steer-into-tool-turn" : "codex-steer-into-tool-turn",
    record: join(home, "model-requests.jsonl"),
    home,
    ...(engine === "claude" ? { cliArgs: ["--allowedTools", "Bash(sleep:*)"] } : {}),
  });
  const child = spawn(command, args, { stdio: ["pipe", "pipe", "ignore"] });
  const lines: ConversationLine[] = [];
  const write: Write = (frame) => {
    lines.push({ dir: "out", frame });
    child.stdin.write(`${JSON.stringify(frame)}\n`);
  };
  const done = new Promise<void>((resolve) => child.on("exit", () => resolve()));
  const deadline = setTimeout(() => child.kill("SIGKILL"), 90_000);
  const conversation = engine === "claude" ? claudeConversation(write) : codexConversation(write);
  createInterface({ input: child.stdout }).on("line", (line) => {
    let frame: Frame;
    try {
      frame = JSON.parse(line) as Frame;
    } catch {
      return;
    }
    lines.push({ dir: "in", frame });
    if (conversation.next(frame)) child.stdin.end();
  });
  conversation.start();
  await done;
  clearTimeout(deadline);
  return lines;
}

function claudeConversation(write: Write): Conversation {
  const user = (uuid: string, content: string) =>
    write({ type: "user", message: { role: "user", content }, parent_tool_use_id: null, uuid });
  let steered = false;
  return {
    start: () => user(PROBE_INPUTS.A.claude, PROBE_INPUTS.A.text),
    next(frame) {
      const message = frame.message as { content?: { type?: string }[] } | undefined;
      if (
        !steered &&
        frame.type === "assistant" &&
        message?.content?.some((block) => block.type === "tool_use")
      ) {
        steered = true;
        user(PROBE_INPUTS.B.claude, PROBE_INPUTS.B.text);
      }
      return frame.type === "result";
    },
  };
}

function codexConversation(write: Write): Conversation {
  let threadId: string | undefined;
  let turnId: string | undefined;
  let steered = false;
  const input = (text: string) => [{ type: "text", text }];
  return {
    start() {
      write({
        id: 1,
        method: "initialize",
        params: {
          clientInfo: { name: "lampline-probe", version: "0.1.0" },
          capabilities: { experimentalApi: true },
        },
      });
    },
    next(frame) {
      const result = frame.result as { thread?: { id?: string }; turn?: { id?: string } } | undefined;
      if (frame.id === 1) {
        write({ method: "initialized" });
        write({ id: 2, method: "thread/start", params: {} });
      }
      if (frame.id === 2 && result?.thread?.id) {
        threadId = result.thread.id;
        write({
          id: 3,
          method: "turn/start",
          params: { threadId, input: input(PROBE_INPUTS.A.text), clientUserMessageId: PROBE_INPUTS.A.codex },
        });
      }
      if (frame.id === 3 && result?.turn?.id) turnId = result.turn.id;
      const item = (frame.params as { item?: { type?: string } } | undefined)?.item;
      if (!steered && frame.method === "item/started" && item?.type === "commandExecution" && turnId) {
        steered = true;
        write({
          id: 4,
          method: "turn/steer",
          params: {
            threadId,
            expectedTurnId: turnId,
            input: input(PROBE_INPUTS.B.text),
            clientUserMessageId: PROBE_INPUTS.B.codex,
          },
        });
      }
      return frame.method === "turn/completed";
    },
  };
}
