import { appendFileSync } from "node:fs";
import { createInterface } from "node:readline";

/** A parsed line the host wrote on our stdin. */
export type LiveFrame = Record<string, unknown>;

/** Thrown to the player when stdin ended while it waited for a frame: the host is gone, so the engine exits. */
export class EndOfInput extends Error {
  constructor() {
    super("stdin ended");
  }
}

/**
 * The simulated engine's stdio: every stdin line is appended to the input log (for tests to count what the host
 * wrote), parsed and queued; players take the first queued frame that matches what they wait for.
 */
export class LiveIo {
  private readonly queued: LiveFrame[] = [];
  private wake: (() => void) | undefined;
  private ended = false;

  constructor(private readonly inputLog?: string) {}

  start(): void {
    const lines = createInterface({ input: process.stdin, crlfDelay: Infinity });
    lines.on("line", (line) => {
      if (this.inputLog) appendFileSync(this.inputLog, `${line}\n`);
      const frame = parseObject(line);
      if (frame) this.queued.push(frame);
      else process.stderr.write(`engine-sim: ignoring a stdin line that is not a JSON object\n`);
      this.notify();
    });
    lines.on("close", () => {
      this.ended = true;
      this.notify();
    });
  }

  async take(matches: (frame: LiveFrame) => boolean): Promise<LiveFrame> {
    for (;;) {
      const index = this.queued.findIndex(matches);
      if (index >= 0) return this.queued.splice(index, 1)[0] as LiveFrame;
      if (this.ended) throw new EndOfInput();
      await new Promise<void>((resolve) => (this.wake = resolve));
    }
  }

  async untilEnd(): Promise<void> {
    while (!this.ended) await new Promise<void>((resolve) => (this.wake = resolve));
  }

  emit(frame: unknown): void {
    process.stdout.write(`${JSON.stringify(frame)}\n`);
  }

  /** Ends the process once everything printed so far has been handed to the pipe. */
  async exit(code: number): Promise<never> {
    await new Promise<void>((resolve) => process.stdout.write("", () => resolve()));
    process.exit(code);
  }

  private notify(): void {
    const wake = this.wake;
    this.wake = undefined;
    wake?.();
  }
}

function parseObject(line: string): LiveFrame | undefined {
  try {
    const value: unknown = JSON.parse(line);
    return typeof value === "object" && value !== null && !Array.isArray(value)
      ? (value as LiveFrame)
      : undefined;
  } catch {
    return undefined;
  }
}
