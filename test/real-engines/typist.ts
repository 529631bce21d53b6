import { spawn, type ChildProcess } from "node:child_process";
import { randomUUID } from "node:crypto";
import { mkdirSync, readdirSync, statSync, symlinkSync } from "node:fs";
import { join } from "node:path";
import { createInterface } from "node:readline";
import type { RedisClient } from "../../libs/redis/redis-client.js";
import type { Keyspace } from "../../libs/redis/keyspace.js";
import { recordsOf } from "../engine-runner/engine-records.js";
import { sandboxCommand } from "../../tools/real-engines/sandbox-command.js";
import { waitFor } from "../helpers/test-redis.js";

/**
 * The person at the keyboard of a real CLI that a transcript-tail agent follows: the runner only records each input
 * as handed over; the typist sees that record and types the text into the CLI (run in its sandbox), which writes
 * the session file the tail agent reads.
 */
export class Typist {
  private typed = 0;
  private readonly child: ChildProcess;
  private readonly frames: Record<string, unknown>[] = [];

  private constructor(
    readonly engine: "claude" | "codex",
    private readonly home: string,
    scenario: string,
    extra: string[],
  ) {
    mkdirSync(home, { recursive: true });
    const { command, args } = sandboxCommand({
      engine,
      scenario,
      record: join(home, "model-requests.jsonl"),
      home,
      cliArgs: extra,
    });
    this.child = spawn(command, args, { stdio: ["pipe", "pipe", "ignore"] });
    createInterface({ input: this.child.stdout as NodeJS.ReadableStream }).on("line", (line) => {
      try {
        this.frames.push(JSON.parse(line) as Record<string, unknown>);
      } catch {
        // Not a frame (the CLI's own notices): nothing to follow.
      }
    });
  }

  /** Claude Code with a fixed session id, so its transcript path is known before it exists. */
  static claude(
    home: string,
    scenario: string,
    extra: string[] = [],
  ): { typist: Typist; transcript: string } {
    const session = randomUUID();
    const work = join(home, "work");
    const transcript = join(home, ".claude", "projects", work.replace(/[/.]/g, "-"), `${session}.jsonl`);
    return { typist: new Typist("claude", home, scenario, ["--session-id", session, ...extra]), transcript };
  }

  /** Codex app-server: a thread is started at once; its rollout file is linked at `link` once Codex creates it. */
  static async codex(home: string, scenario: string, link: string): Promise<Typist> {
    const typist = new Typist("codex", home, scenario, []);
    typist.write({
      id: 1,
      method: "initialize",
      params: { clientInfo: { name: "typist", version: "0.1.0" }, capabilities: { experimentalApi: true } },
    });
    await typist.frame((frame) => frame.id === 1);
    typist.write({ method: "initialized" });
    typist.write({ id: 2, method: "thread/start", params: {} });
    const started = await typist.frame((frame) => frame.id === 2);
    typist.threadId = String(
      ((started.result as Record<string, unknown>).thread as Record<string, unknown>).id,
    );
    typist.rolloutLink = link;
    return typist;
  }

  private threadId: string | undefined;
  private rolloutLink: string | undefined;
  private turnId: string | undefined;
  private nextId = 3;

  /** Types every input the runner handed over to `agentId` that was not typed yet, in order. */
  async typeHandedOver(redis: RedisClient, keys: Keyspace, agentId: string, count: number): Promise<void> {
    const handed = await waitFor(
      async () =>
        (await recordsOf(redis, keys, agentId)).flatMap((entry) =>
          entry.record.type === "handed_over" ? [entry.record] : [],
        ),
      (records) => records.length >= count,
      { timeoutMs: 60_000, intervalMs: 50 },
    );
    if (handed.length < count) throw new Error(`${agentId}: ${count} inputs never handed over`);
    for (const input of handed.slice(this.typed, count)) await this.type(input.text);
    this.typed = count;
  }

  /** Resolves once the CLI printed a frame matching `accept` (seen before or after the call). */
  async frame(accept: (frame: Record<string, unknown>) => boolean): Promise<Record<string, unknown>> {
    const found = await waitFor(
      () => this.frames.find(accept),
      (frame) => frame !== undefined,
      { timeoutMs: 60_000, intervalMs: 25 },
    );
    if (!found) throw new Error(`${this.engine}: expected frame never came`);
    return found;
  }

  stop(): void {
    this.child.stdin?.end();
  }

  private async type(text: string): Promise<void> {
    if (this.engine === "claude") {
      this.write({
        type: "user",
        message: { role: "user", content: text },
        parent_tool_use_id: null,
        uuid: randomUUID(),
      });
      return;
    }
    const running =
      this.turnId !== undefined &&
      !this.frames.some(
        (frame) =>
          frame.method === "turn/completed" &&
          ((frame.params as Record<string, unknown>).turn as Record<string, unknown>).id === this.turnId,
      );
    const id = this.nextId++;
    const input = [{ type: "text", text }];
    this.write(
      running
        ? {
            id,
            method: "turn/steer",
            params: { threadId: this.threadId, expectedTurnId: this.turnId, input },
          }
        : { id, method: "turn/start", params: { threadId: this.threadId, input } },
    );
    const answer = await this.frame((frame) => frame.id === id);
    const turn = (answer.result as Record<string, unknown> | undefined)?.turn as
      Record<string, unknown> | undefined;
    if (!running && typeof turn?.id === "string") this.turnId = turn.id;
    if (this.rolloutLink) await this.linkRollout(this.rolloutLink);
  }

  /** Codex names its rollout `sessions/YYYY/MM/DD/rollout-<time>-<thread id>.jsonl`; the tail agent follows a link. */
  private async linkRollout(link: string): Promise<void> {
    const sessions = join(this.home, ".codex", "sessions");
    const found = await waitFor(
      () => findFile(sessions, (name) => name.endsWith(`${this.threadId}.jsonl`)),
      (path) => path !== undefined,
      { timeoutMs: 30_000, intervalMs: 50 },
    );
    if (!found) throw new Error(`codex wrote no rollout for thread ${this.threadId}`);
    symlinkSync(found, link);
    this.rolloutLink = undefined;
  }

  private write(frame: unknown): void {
    this.child.stdin?.write(`${JSON.stringify(frame)}\n`);
  }
}

function findFile(folder: string, match: (name: string) => boolean): string | undefined {
  let entries: string[];
  try {
    entries = readdirSync(folder);
  } catch {
    return undefined;
  }
  for (const entry of entries) {
    const path = join(folder, entry);
    if (statSync(path).isDirectory()) {
      const inner = findFile(path, match);
      if (inner) return inner;
    } else if (match(entry)) return path;
  }
  return undefined;
}
