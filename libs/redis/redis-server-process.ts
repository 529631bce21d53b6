import type { ChildProcess } from "node:child_process";
import { mkdtempSync, writeFileSync } from "node:fs";
import { createServer } from "node:net";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { Redis } from "ioredis";
import { z } from "zod";
import { spawnOwned, type OwnedProcess } from "../processes/owned-processes.js";

export interface RedisServerOptions {
  /** Directory for AOF/RDB files; a fresh temp dir when omitted. */
  dir?: string;
  port?: number;
  appendonly?: boolean;
  appendfsync?: "always" | "everysec" | "no";
  /** Clients must AUTH with it; it goes into the 0600 config file, never onto the command line. */
  password?: string;
  /** A Redis Cluster node (`cluster-enabled yes`, its node table kept in `<dir>/nodes.conf` across restarts). */
  cluster?: boolean;
}

/** redis-server could not start: the reason is its own last log line (e.g. the port is in use). */
export class RedisServerStartError extends Error {}

const READY_TIMEOUT_MS = 10_000;

/** Field values up to this many bytes keep a hash in the compact listpack encoding (Redis's default is 64). */
export const HASH_MAX_LISTPACK_VALUE = 1024;

/** Ports handed out by freePort: below Linux's ephemeral range (32768+) where listen(0) and outgoing sockets draw. */
const FREE_PORT_RANGE = { from: 20_000, to: 32_000 };

/**
 * A port that is free now, chosen at random below the ephemeral range, so no server listening on port 0 and no
 * outgoing connection can take it between this check and the process that will listen on it.
 */
export async function freePort(): Promise<number> {
  for (let attempt = 0; attempt < 200; attempt += 1) {
    const port =
      FREE_PORT_RANGE.from + Math.floor(Math.random() * (FREE_PORT_RANGE.to - FREE_PORT_RANGE.from));
    if (await canListen(port)) return port;
  }
  throw new Error(`no free port between ${FREE_PORT_RANGE.from} and ${FREE_PORT_RANGE.to}`);
}

function canListen(port: number): Promise<boolean> {
  return new Promise((resolve) => {
    const server = createServer();
    server.unref();
    server.once("error", () => resolve(false));
    server.listen(port, "127.0.0.1", () => server.close(() => resolve(true)));
  });
}

/**
 * A private redis-server child process (from PATH): used by `npm start` when no REDIS_URL is configured and by
 * tests that must kill or restart Redis. Data survives restart() when AOF is on. The server runs in its own process
 * group under a parent-death watchdog (see spawnOwned), so it never outlives this process and a signal to our
 * process group does not stop it before the services that use it have drained.
 */
export class RedisServerProcess {
  private server: OwnedProcess | undefined;
  private exited: Promise<void> = Promise.resolve();
  private crashed: (how: string) => void = () => undefined;

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
    const auth = this.options.password ? `:${encodeURIComponent(this.options.password)}@` : "";
    return `redis://${auth}127.0.0.1:${this.port}`;
  }

  /** The address without credentials, for logs. */
  get address(): string {
    return `127.0.0.1:${this.port}`;
  }

  get pid(): number | undefined {
    return this.server?.child.pid;
  }

  /**
   * Called when the server exits without being asked to (a crash, a kill from outside), with how it ended; never
   * for stop(), kill() or restart().
   */
  onCrash(listener: (how: string) => void): void {
    this.crashed = listener;
  }

  /**
   * Redis at `maxmemory` (noeviction): the limit set to the memory used now, so every command that would grow it is
   * refused with OOM until the returned release restores the previous limit.
   */
  async squeezeMemory(): Promise<{ release(): Promise<void> }> {
    const admin = new Redis(this.url, { maxRetriesPerRequest: 1 });
    admin.on("error", () => undefined);
    const [, previous = "0"] = z
      .tuple([z.string(), z.string()])
      .parse(await admin.config("GET", "maxmemory"));
    const used = /used_memory:(\d+)/.exec(await admin.info("memory"))?.[1];
    if (used === undefined) throw new Error(`redis-server on ${this.address} reports no used_memory`);
    await admin.config("SET", "maxmemory", used);
    return {
      async release() {
        try {
          await admin.config("SET", "maxmemory", previous);
        } finally {
          admin.disconnect();
        }
      },
    };
  }

  /** Abrupt death (SIGKILL): what AOF must survive. */
  async kill(): Promise<void> {
    await this.terminate("SIGKILL");
  }

  /** Graceful: redis-server flushes the AOF and exits. */
  async stop(): Promise<void> {
    await this.terminate("SIGTERM");
  }

  async restart(): Promise<void> {
    await this.terminate("SIGKILL");
    await this.launch();
  }

  private async launch(): Promise<void> {
    const config = join(this.dir, "redis.conf");
    writeFileSync(config, this.configText(), { mode: 0o600 });
    // umask 077: the AOF and any dump are readable by their owner only; exec keeps the pid redis-server's own.
    const server = spawnOwned("sh", ["-c", 'umask 077; exec redis-server "$0"', config], {
      stdio: ["ignore", "pipe", "pipe"],
      onOwnerExit: "SIGTERM",
    });
    this.server = server;
    let output = "";
    const append = (chunk: Buffer) => (output = (output + chunk.toString()).slice(-4_000));
    server.child.stdout?.on("data", append);
    server.child.stderr?.on("data", append);
    this.exited = closeOf(server.child);
    const pid = server.child.pid;
    if (pid === undefined) throw new RedisServerStartError("cannot start redis-server: sh not found");
    if (await this.waitUntilServing(server.child, pid)) {
      // terminate() forgets the server before it signals it: an exit of the server still ours is a crash.
      server.child.once("exit", (code, signal) => {
        if (this.server === server) this.crashed(signal ? `killed by ${signal}` : `exited with code ${code}`);
      });
      return;
    }
    await this.exited;
    throw new RedisServerStartError(
      `redis-server could not start on ${this.address}: ${lastLine(output) ?? "it exited at once"}`,
    );
  }

  private configText(): string {
    const lines = [
      `port ${this.port}`,
      "bind 127.0.0.1",
      `dir "${this.dir}"`,
      'save ""',
      "daemonize no",
      "loglevel warning",
      "maxmemory-policy noeviction",
      // Run, result, outbox and playback hashes carry texts and JSON longer than the default 64 bytes, which
      // turns them into hash tables at twice the size; docs/operations.md "Redis settings".
      `hash-max-listpack-value ${HASH_MAX_LISTPACK_VALUE}`,
      `appendonly ${this.options.appendonly === false ? "no" : "yes"}`,
      `appendfsync ${this.options.appendfsync ?? "everysec"}`,
    ];
    if (this.options.password) lines.push(`requirepass "${this.options.password}"`);
    if (this.options.cluster)
      lines.push("cluster-enabled yes", "cluster-config-file nodes.conf", "cluster-node-timeout 2000");
    return `${lines.join("\n")}\n`;
  }

  /**
   * True once the server on our port answers and is our child (not another server holding the port); false when
   * the child exited first.
   */
  private async waitUntilServing(child: ChildProcess, pid: number): Promise<boolean> {
    const deadline = Date.now() + READY_TIMEOUT_MS;
    while (child.exitCode === null && child.signalCode === null) {
      if (Date.now() > deadline)
        throw new RedisServerStartError(`redis-server on ${this.address} did not become ready`);
      const probe = new Redis(this.url, {
        lazyConnect: true,
        maxRetriesPerRequest: 0,
        retryStrategy: () => null,
      });
      probe.on("error", () => undefined);
      try {
        await probe.connect();
        if ((await probe.info("server")).includes(`process_id:${pid}\r\n`)) return true;
      } catch {
        // not listening yet
      } finally {
        probe.disconnect();
      }
      await new Promise((resolve) => setTimeout(resolve, 50));
    }
    return false;
  }

  private async terminate(signal: NodeJS.Signals): Promise<void> {
    const server = this.server;
    this.server = undefined;
    if (!server || server.child.exitCode !== null || server.child.signalCode !== null) return;
    server.signalGroup(signal);
    await this.exited;
  }
}

/** After exit and after all of its output was read. */
function closeOf(child: ChildProcess): Promise<void> {
  return new Promise((resolve) => {
    child.once("close", () => resolve());
    child.once("error", () => resolve());
  });
}

function lastLine(output: string): string | undefined {
  const lines = output
    .split("\n")
    .map((line) => line.replace(/^\d+:[A-Z] [^*#]*[*#] /, "").trim())
    .filter((line) => line.length > 0);
  return lines.at(-1);
}
