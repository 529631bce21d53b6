import type { ChildProcess } from "node:child_process";
import { dirname, resolve } from "node:path";
import { fileURLToPath } from "node:url";
import { signalOwnedProcesses, spawnOwned, type OwnedProcess } from "../../libs/processes/owned-processes.js";

export const projectRoot = resolve(dirname(fileURLToPath(import.meta.url)), "../..");

// A test worker stopped by vitest (timeout, Ctrl-C) takes its services with it; SIGKILL of the worker is covered by
// each child's watchdog. The signal is raised again afterwards so the worker still ends as it would have.
for (const signal of ["SIGTERM", "SIGINT"] as const)
  process.once(signal, () => {
    signalOwnedProcesses("SIGKILL");
    process.kill(process.pid, signal);
  });

/**
 * A TypeScript entry point run as its own OS process (node + tsx), as in production, in its own process group: a
 * SIGKILL takes the group (the service and any engines it started), other signals go to the node process only so
 * it can drain. It never outlives the test process.
 */
export class TsProcess {
  private owned: OwnedProcess;
  private output = "";
  private exited: Promise<number | null>;

  constructor(
    readonly entry: string,
    /** Merged over this process's environment; a variable set to undefined is removed. */
    readonly env: Record<string, string | undefined>,
    readonly args: string[] = [],
    private readonly command: readonly [string, string[]] = [
      process.execPath,
      ["--import", "tsx", resolve(projectRoot, entry), ...args],
    ],
    /** Where the command's relative paths resolve: the checkout, or a compiled tree laid out as the image. */
    private readonly cwd: string = projectRoot,
  ) {
    this.owned = this.spawnChild();
    this.exited = this.exitOf(this.owned.child);
  }

  /** `npm run <script>` (npm → sh → node), to test what an operator's signals do to the real entry point. */
  static npmScript(script: string, env: Record<string, string | undefined>): TsProcess {
    return new TsProcess(`npm run ${script}`, env, [], ["npm", ["run", "--silent", script]]);
  }

  get pid(): number | undefined {
    return this.owned.child.pid;
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
      if (this.owned.child.exitCode !== null)
        throw new Error(`${this.entry} exited (${this.owned.child.exitCode})\n${this.output}`);
      await new Promise((done) => setTimeout(done, 20));
    }
  }

  /** Resolves with the exit code once the process ends by itself. */
  async exit(): Promise<number | null> {
    return this.exited;
  }

  /** SIGKILL ends the whole process group; any other signal goes to the process, which may drain. */
  async kill(signal: NodeJS.Signals = "SIGKILL"): Promise<number | null> {
    if (signal === "SIGKILL") this.owned.signalGroup(signal);
    else if (this.running) this.owned.child.kill(signal);
    return this.exited;
  }

  /** Signals the whole process group, as a terminal's Ctrl-C or `kill -- -pgid` does. */
  async signalGroup(signal: NodeJS.Signals): Promise<number | null> {
    this.owned.signalGroup(signal);
    return this.exited;
  }

  async restart(): Promise<void> {
    await this.kill("SIGKILL");
    this.owned = this.spawnChild();
    this.exited = this.exitOf(this.owned.child);
  }

  private get running(): boolean {
    return this.owned.child.exitCode === null && this.owned.child.signalCode === null;
  }

  private spawnChild(): OwnedProcess {
    const [file, args] = this.command;
    const owned = spawnOwned(file, args, {
      cwd: this.cwd,
      env: childEnv(this.env),
      stdio: ["ignore", "pipe", "pipe"],
      onOwnerExit: "SIGKILL",
    });
    const append = (chunk: Buffer) => {
      this.output = (this.output + chunk.toString()).slice(-200_000);
    };
    owned.child.stdout?.on("data", append);
    owned.child.stderr?.on("data", append);
    return owned;
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
