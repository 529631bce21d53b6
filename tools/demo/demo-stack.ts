import { randomBytes } from "node:crypto";
import { createWriteStream } from "node:fs";
import { dirname, join, resolve } from "node:path";
import { fileURLToPath } from "node:url";
import { sleep } from "../../libs/timing/sleep.js";
import { spawnOwned, type OwnedProcess } from "../../libs/processes/owned-processes.js";

const projectRoot = resolve(dirname(fileURLToPath(import.meta.url)), "../..");
const LISTENING = /all-in-one: listening on (http:\/\/\S+)/;
const START_TIMEOUT_MS = 180_000;

export interface DemoStackOptions {
  dir: string;
  port: number;
  agentsFile: string;
  /** The demo loses one playback's acks on purpose: a short wait makes that playback uncertain quickly. */
  playbackAckTimeoutMs: number;
  failureNotice: string;
}

export interface DemoSecrets {
  os: string;
  harness: string;
}

/** The stack as `npm start` runs it (every service in one process, an embedded Redis), fed the demo's agents. */
export class DemoStack {
  readonly secrets: DemoSecrets = {
    os: randomBytes(32).toString("hex"),
    harness: randomBytes(32).toString("hex"),
  };
  readonly logFile: string;
  private owned: OwnedProcess | undefined;
  private exited: Promise<number | null> = Promise.resolve(null);

  constructor(private readonly options: DemoStackOptions) {
    this.logFile = join(options.dir, "stack.log");
  }

  get httpUrl(): string {
    return `http://127.0.0.1:${this.options.port}`;
  }

  get lampUrl(): string {
    return `ws://127.0.0.1:${this.options.port}/v1/lamp/ws`;
  }

  /** Resolves once the process listens and every service answers /readyz. */
  async start(): Promise<void> {
    const { dir, port, agentsFile, playbackAckTimeoutMs, failureNotice } = this.options;
    const env: NodeJS.ProcessEnv = {
      ...process.env,
      HOST: "127.0.0.1",
      PORT: String(port),
      REDIS_DATA_DIR: join(dir, "redis"),
      AGENTS_FILE: agentsFile,
      AUTH_JWT_SECRET: this.secrets.os,
      HARNESS_JWT_SECRET: this.secrets.harness,
      PLAYBACK_ACK_TIMEOUT_MS: String(playbackAckTimeoutMs),
      FAILURE_NOTICE_TEXT: failureNotice,
    };
    // Its own Redis, always: the demo never writes into a Redis someone else configured.
    delete env.REDIS_URL;
    delete env.REDIS_PORT;
    const owned = spawnOwned(
      process.execPath,
      ["--import", "tsx", join(projectRoot, "services/all-in-one/main.ts")],
      {
        cwd: projectRoot,
        env,
        stdio: ["ignore", "pipe", "pipe"],
        onOwnerExit: "SIGTERM",
      },
    );
    this.owned = owned;
    this.exited = new Promise((done) => owned.child.once("exit", (code) => done(code)));
    const log = createWriteStream(this.logFile);
    owned.child.stdout?.pipe(log);
    const listening = new Promise<void>((ready, failed) => {
      let seen = "";
      owned.child.stderr?.on("data", (chunk: Buffer) => {
        log.write(chunk);
        seen = (seen + chunk.toString()).slice(-4_000);
        if (LISTENING.test(seen)) ready();
      });
      void this.exited.then((code) =>
        failed(new Error(`the stack exited (${code}) before listening: ${lastLine(seen)}`)),
      );
    });
    await withTimeout(listening, START_TIMEOUT_MS, "the stack did not start listening");
    await withTimeout(this.untilReady(), START_TIMEOUT_MS, "the stack did not become ready");
  }

  /** SIGTERM: the services drain, the embedded Redis stops last. */
  async stop(): Promise<number | null> {
    if (!this.owned) return null;
    this.owned.child.kill("SIGTERM");
    return this.exited;
  }

  private async untilReady(): Promise<void> {
    for (;;) {
      const ready = await fetch(`${this.httpUrl}/readyz`).then(
        (response) => response.ok,
        () => false,
      );
      if (ready) return;
      await sleep(250);
    }
  }
}

function lastLine(text: string): string {
  return text.trim().split("\n").at(-1) ?? "";
}

async function withTimeout<T>(work: Promise<T>, timeoutMs: number, what: string): Promise<T> {
  let timer: NodeJS.Timeout | undefined;
  const timeout = new Promise<never>((_, failed) => {
    timer = setTimeout(() => failed(new Error(`${what} within ${timeoutMs / 1000} s`)), timeoutMs);
  });
  try {
    return await Promise.race([work, timeout]);
  } finally {
    clearTimeout(timer);
  }
}
