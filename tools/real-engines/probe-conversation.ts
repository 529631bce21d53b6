import { spawn } from "node:child_process";
import { mkdtempSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { createInterface } from "node:readline";
import { projectRoot } from "./project-root.js";
import type { RealEngine } from "./pins.js";

const SCENARIOS = join(projectRoot, "test", "real-engines", "model-scenarios");
const A = "Run the check.";
const B = "Also say FOLDED.";

/**
 * One fixed conversation with a real CLI in its sandbox — a tool-use turn (A) with a second input written while
 * the tool runs (B) — returning every frame the CLI printed. The same conversation against two versions shows how
 * their wire differs.
 */
export async function probeConversation(
  engine: RealEngine,
  version: string,
): Promise<Record<string, unknown>[]> {
  const home = mkdtempSync(join(tmpdir(), `drift-${engine}-${version}-`));
  const scenario = join(
    SCENARIOS,
    engine === "claude" ? "claude-steer-into-tool-turn.json" : "codex-steer-into-tool-turn.json",
  );
  const child = spawn(
    "unshare",
    [
      "--net",
      "--",
      process.execPath,
      join(projectRoot, "bin", "engine-sandbox.mjs"),
      ...["--engine", engine, "--engine-version", version, "--scenario", scenario],
      ...["--record", join(home, "model-requests.jsonl"), "--home", home],
      ...(engine === "claude" ? ["--", "--allowedTools", "Bash(sleep:*)"] : []),
    ],
    { stdio: ["pipe", "pipe", "ignore"] },
  );
  const frames: Record<string, unknown>[] = [];
  const write = (frame: unknown) => child.stdin.write(`${JSON.stringify(frame)}\n`);
  const done = new Promise<void>((resolve) => child.on("exit", () => resolve()));
  const deadline = setTimeout(() => child.kill("SIGKILL"), 90_000);
  const conversation = engine === "claude" ? claudeConversation(write) : codexConversation(write);
  createInterface({ input: child.stdout }).on("line", (line) => {
    let frame: Record<string, unknown>;
    try {
      frame = JSON.parse(line) as Record<string, unknown>;
    } catch {
      return;
    }
    frames.push(frame);
    if (conversation.next(frame)) child.stdin.end();
  });
  conversation.start();
  await done;
  clearTimeout(deadline);
  return frames;
}

interface Conversation {
  start(): void;
  /** Reacts to a frame; true once the conversation is over. */
  next(frame: Record<string, unknown>): boolean;
}

function claudeConversation(write: (frame: unknown) => void): Conversation {
  const user = (uuid: string, content: string) =>
    write({ type: "user", message: { role: "user", content }, parent_tool_use_id: null, uuid });
  let steered = false;
  return {
    start: () => user("11111111-1111-4111-8111-111111111111", A),
    next(frame) {
      const message = frame.message as { content?: { type?: string }[] } | undefined;
      if (
        !steered &&
        frame.type === "assistant" &&
        message?.content?.some((block) => block.type === "tool_use")
      ) {
        steered = true;
        user("22222222-2222-4222-8222-222222222222", B);
      }
      return frame.type === "result";
    },
  };
}

function codexConversation(write: (frame: unknown) => void): Conversation {
  let threadId: string | undefined;
  let turnId: string | undefined;
  let steered = false;
  return {
    start() {
      write({
        id: 1,
        method: "initialize",
        params: {
          clientInfo: { name: "lampline-drift", version: "0.1.0" },
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
          params: { threadId, input: [{ type: "text", text: A }], clientUserMessageId: "drift-a" },
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
            input: [{ type: "text", text: B }],
            clientUserMessageId: "drift-b",
          },
        });
      }
      return frame.method === "turn/completed";
    },
  };
}
