import { spawn, type ChildProcess } from "node:child_process";
import { mkdtempSync } from "node:fs";
import { createServer } from "node:net";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { Redis } from "ioredis";

export interface RedisServerOptions {
  /** Directory for AOF/RDB files; a fresh temp dir when omitted. */
  dir?: string;
  port?: number;
  appendonly?: boolean;
  appendfsync?: "always" | "everysec" | "no";
}

export async function freePort(): Promise<number> {
  return new Promise((resolve, reject) => {
    const server = createServer();
    server.unref();
    server.on("error", reject);
    server.listen(0, "127.0.0.1", () => {
      const address = server.address();
      const port = typeof address === "object" && address ? address.port : 0;
      server.close(() => resolve(port));
    });
  });
}

/**
 * A private redis-server child process (from PATH): used by `npm start` when no REDIS_URL is configured and by
 * tests that must kill or restart Redis. Data survives restart() when AOF is on.
 */
export class RedisServerProcess {
  private child: ChildProcess | undefined;

  private constructor(
    readonly port: number,
    readonly dir: string,
    private readonly options: RedisServerOptions,
  ) {}

  static async start(options: RedisServerOptions = {}): Promise<RedisServerProcess> {
    const port = options.port ?? (await freePort());
    const dir = options.dir ?? mkdtempSync(join(tmpdir(), "lampline-redis-"));
    const server = new RedisServerProcess(port, dir, options);
    await server.launch();
    return server;
  }

  get url(): string {
    return `redis://127.0.0.1:${this.port}`;
  }

  get pid(): number | undefined {
    return this.child?.pid;
  }

  /** Abrupt death (SIGKILL): what AOF must survive. */
  async kill(): Promise<void> {
    await this.terminate("SIGKILL");
  }

  async stop(): Promise<void> {
    await this.terminate("SIGTERM");
  }

  async restart(): Promise<void> {
    await this.terminate("SIGKILL");
    await this.launch();
  }

  private async launch(): Promise<void> {
    const args = [
      "--port",
      String(this.port),
      "--bind",
      "127.0.0.1",
      "--dir",
      this.dir,
      "--save",
      "",
      "--daemonize",
      "no",
      "--maxmemory-policy",
      "noeviction",
      "--appendonly",
      this.options.appendonly === false ? "no" : "yes",
      "--appendfsync",
      this.options.appendfsync ?? "everysec",
    ];
    const child = spawn("redis-server", args, { stdio: "ignore" });
    this.child = child;
    await new Promise<void>((resolve, reject) => {
      child.once("spawn", () => resolve());
      child.once("error", (error) =>
        reject(new Error(`cannot start redis-server from PATH: ${error.message}`)),
      );
    });
    await this.waitUntilReady();
  }

  private async waitUntilReady(): Promise<void> {
    const deadline = Date.now() + 10_000;
    while (Date.now() < deadline) {
      const probe = new Redis(this.url, {
        lazyConnect: true,
        maxRetriesPerRequest: 0,
        retryStrategy: () => null,
      });
      probe.on("error", () => undefined);
      try {
        await probe.connect();
        if ((await probe.ping()) === "PONG") return;
      } catch {
        await new Promise((resolve) => setTimeout(resolve, 50));
      } finally {
        probe.disconnect();
      }
    }
    throw new Error(`redis-server on port ${this.port} did not become ready`);
  }

  private async terminate(signal: NodeJS.Signals): Promise<void> {
    const child = this.child;
    this.child = undefined;
    if (!child || child.exitCode !== null) return;
    await new Promise<void>((resolve) => {
      child.once("exit", () => resolve());
      child.kill(signal);
    });
  }
}
