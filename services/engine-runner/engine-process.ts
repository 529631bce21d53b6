import { spawn, type ChildProcessWithoutNullStreams } from "node:child_process";
import { createInterface } from "node:readline";

export interface EngineProcessEvents {
  /** Every line the engine printed on stdout, in order (an unterminated last line included). */
  line(line: string): void;
  stderr(text: string): void;
  /** After the process ended and all of its stdout was delivered; `spawned` is false when it never started. */
  closed(exit: { code: number | null; signal: string | null; spawned: boolean; error?: string }): void;
}

/** Engines still running: a runner that exits (drain deadline, crash) takes them with it instead of orphaning them. */
const running = new Set<ChildProcessWithoutNullStreams>();
process.on("exit", () => {
  for (const child of running) child.kill("SIGKILL");
});

/** One engine child process: lines in, lines out, one `closed` at the end whatever the way it ended. */
export class EngineProcess {
  readonly pid: number | undefined;
  /** Resolves after `closed` was delivered. */
  readonly ended: Promise<void>;
  private readonly child: ChildProcessWithoutNullStreams;
  private stdinOpen = true;
  private closed = false;

  constructor(command: readonly string[], events: EngineProcessEvents) {
    const [executable, ...args] = command as [string, ...string[]];
    this.child = spawn(executable, args, { stdio: ["pipe", "pipe", "pipe"] });
    this.pid = this.child.pid;
    running.add(this.child);
    this.child.once("exit", () => running.delete(this.child));
    this.child.stdin.on("error", () => (this.stdinOpen = false));
    this.child.stdin.on("close", () => (this.stdinOpen = false));
    this.child.stderr.on("data", (chunk: Buffer) => events.stderr(chunk.toString()));

    const lines = createInterface({ input: this.child.stdout, crlfDelay: Infinity });
    lines.on("line", (line) => events.line(line));
    const stdoutDone = new Promise<void>((resolve) => lines.once("close", resolve));
    const exited = new Promise<{ code: number | null; signal: string | null; error?: string }>((resolve) => {
      this.child.once("exit", (code, signal) => resolve({ code, signal }));
      this.child.once("error", (error) => {
        if (this.pid === undefined) resolve({ code: null, signal: null, error: error.message });
      });
    });
    this.ended = Promise.all([exited, this.pid === undefined ? undefined : stdoutDone]).then(([exit]) => {
      this.closed = true;
      this.stdinOpen = false;
      events.closed({ ...exit, spawned: this.pid !== undefined });
    });
  }

  get running(): boolean {
    return !this.closed;
  }

  /** Writes one line; false when the engine's stdin is already closed (the frame was recorded, not delivered). */
  write(raw: string): boolean {
    if (!this.stdinOpen) return false;
    this.child.stdin.write(`${raw}\n`);
    return true;
  }

  kill(signal: NodeJS.Signals): void {
    if (!this.closed) this.child.kill(signal);
  }
}
