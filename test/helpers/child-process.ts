import { spawn, type ChildProcess } from "node:child_process";
import { dirname, resolve } from "node:path";
import { fileURLToPath } from "node:url";

export const projectRoot = resolve(dirname(fileURLToPath(import.meta.url)), "../..");

/** A TypeScript entry point run as its own OS process (node + tsx), as in production. */
export class TsProcess {
  private child: ChildProcess;
  private output = "";
  private exited: Promise<number | null>;

  constructor(
    readonly entry: string,
    /** Merged over this process's environment; a variable set to undefined is removed. */
    readonly env: Record<string, string | undefined>,
    readonly args: string[] = [],
  ) {
    this.child = this.spawnChild();
    this.exited = this.exitOf(this.child);
  }

  get pid(): number | undefined {
    return this.child.pid;
  }

  get log(): string {
    return this.output;
  }

  /** Resolves once `marker` appears in the process output. */
  async waitForOutput(marker: string | RegExp, timeoutMs = 20_000): Promise<void> {
    const deadline = Date.now() + timeoutMs;
    const seen = () => (typeof marker === "string" ? this.output.includes(marker) : marker.test(this.output));
    while (!seen()) {
      if (Date.now() > deadline)
        throw new Error(`${this.entry}: no '${marker}' within ${timeoutMs} ms\n${this.output}`);
      if (this.child.exitCode !== null)
        throw new Error(`${this.entry} exited (${this.child.exitCode})\n${this.output}`);
      await new Promise((done) => setTimeout(done, 20));
    }
  }

  /** Resolves with the exit code once the process ends by itself. */
  async exit(): Promise<number | null> {
    return this.exited;
  }

  async kill(signal: NodeJS.Signals = "SIGKILL"): Promise<number | null> {
    if (this.child.exitCode === null && this.child.signalCode === null) this.child.kill(signal);
    return this.exited;
  }

  async restart(): Promise<void> {
    await this.kill("SIGKILL");
    this.child = this.spawnChild();
    this.exited = this.exitOf(this.child);
  }

  private spawnChild(): ChildProcess {
    const child = spawn(
      process.execPath,
      ["--import", "tsx", resolve(projectRoot, this.entry), ...this.args],
      {
        cwd: projectRoot,
        env: childEnv(this.env),
        stdio: ["ignore", "pipe", "pipe"],
      },
    );
    const append = (chunk: Buffer) => {
      this.output = (this.output + chunk.toString()).slice(-200_000);
    };
    child.stdout?.on("data", append);
    child.stderr?.on("data", append);
    return child;
  }

  private exitOf(child: ChildProcess): Promise<number | null> {
    return new Promise((resolveExit) => child.once("exit", (code) => resolveExit(code)));
  }
}

function childEnv(overrides: Record<string, string | undefined>): NodeJS.ProcessEnv {
  const env: NodeJS.ProcessEnv = { ...process.env, ...overrides };
  for (const [name, value] of Object.entries(overrides)) if (value === undefined) delete env[name];
  return env;
}
