import { spawn, type ChildProcess } from "node:child_process";
import { resolve } from "node:path";
import { z } from "zod";
import { projectRoot } from "../helpers/child-process.js";
import { sleep } from "../../libs/timing/sleep.js";

const simEventSchema = z.looseObject({ event: z.string(), at: z.number() });
export type SimEvent = z.infer<typeof simEventSchema> & Record<string, unknown>;

/** `bin/lamp-sim.mjs` run exactly as a user runs it, its JSON-line events collected from stdout. */
export class LampSimProcess {
  readonly events: SimEvent[] = [];
  private readonly child: ChildProcess;
  private stderr = "";
  readonly exited: Promise<number | null>;

  constructor(args: string[]) {
    this.child = spawn(process.execPath, [resolve(projectRoot, "bin/lamp-sim.mjs"), ...args], {
      cwd: projectRoot,
      stdio: ["ignore", "pipe", "pipe"],
    });
    let pending = "";
    this.child.stdout?.on("data", (chunk: Buffer) => {
      pending += chunk.toString();
      const lines = pending.split("\n");
      pending = lines.pop() ?? "";
      for (const line of lines) if (line.trim()) this.events.push(simEventSchema.parse(JSON.parse(line)));
    });
    this.child.stderr?.on("data", (chunk: Buffer) => (this.stderr += chunk.toString()));
    this.exited = new Promise((done) => this.child.once("exit", (code) => done(code)));
  }

  of(event: string): SimEvent[] {
    return this.events.filter((candidate) => candidate.event === event);
  }

  /** Frames the OS sent of one type. */
  received(type: string): Record<string, unknown>[] {
    return this.of("received")
      .map((event) => event.frame as Record<string, unknown>)
      .filter((frame) => frame.type === type);
  }

  async waitFor(event: string, count = 1, timeoutMs = 60_000): Promise<SimEvent[]> {
    const deadline = Date.now() + timeoutMs;
    while (this.of(event).length < count) {
      if (Date.now() > deadline)
        throw new Error(`lamp-sim: no ${count}x '${event}' in ${timeoutMs} ms\n${this.log()}`);
      await sleep(25);
    }
    return this.of(event);
  }

  log(): string {
    return `${this.events.map((event) => JSON.stringify(event)).join("\n")}\n${this.stderr}`;
  }

  async stop(): Promise<number | null> {
    if (this.child.exitCode === null && this.child.signalCode === null) this.child.kill("SIGTERM");
    return this.exited;
  }
}
