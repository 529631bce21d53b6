import { execFile } from "node:child_process";
import { promisify } from "node:util";
import { Redis } from "ioredis";
import { z } from "zod";
import type { ClusterNode } from "./connections.js";
import { freePort, RedisServerProcess, RedisServerStartError } from "./redis-server-process.js";

const run = promisify(execFile);

const READY_TIMEOUT_MS = 30_000;
const NODE_START_ATTEMPTS = 5;

export interface RedisClusterOptions {
  /** How many master nodes (no replicas); three is Redis Cluster's minimum. */
  masters?: number;
  /** AOF fsync policy of every node (default everysec); `always` loses no acknowledged write to a node's SIGKILL. */
  appendfsync?: "always" | "everysec";
}

/**
 * A Redis Cluster on loopback for tests and the chaos campaign: `masters` redis-server children (from PATH, with
 * `--cluster-enabled yes`, AOF on) joined by `redis-cli --cluster create`, ready once every node reports
 * `cluster_state:ok`. A node can be killed, stopped and restarted; it rejoins with its node table and data.
 */
export class RedisClusterProcess {
  private constructor(readonly servers: readonly RedisServerProcess[]) {}

  static async start(options: RedisClusterOptions = {}): Promise<RedisClusterProcess> {
    const masters = options.masters ?? 3;
    const servers: RedisServerProcess[] = [];
    try {
      for (let index = 0; index < masters; index += 1) servers.push(await startNode(options));
      const cluster = new RedisClusterProcess(servers);
      await run("redis-cli", ["--cluster", "create", ...cluster.addresses, "--cluster-yes"], {
        timeout: READY_TIMEOUT_MS,
      });
      await cluster.untilReady();
      return cluster;
    } catch (error) {
      await Promise.all(servers.map((server) => server.kill()));
      throw error;
    }
  }

  get nodes(): ClusterNode[] {
    return this.servers.map((server) => ({ host: "127.0.0.1", port: server.port }));
  }

  /** `host:port` of every node. */
  get addresses(): string[] {
    return this.servers.map((server) => server.address);
  }

  /** The REDIS_CLUSTER_NODES value naming every node. */
  get nodesEnv(): string {
    return this.addresses.join(",");
  }

  node(index: number): RedisServerProcess {
    const server = this.servers[index];
    if (server === undefined) throw new RangeError(`no cluster node ${index} (of ${this.servers.length})`);
    return server;
  }

  /** Abrupt death of one node: its slots are unavailable until it is back. */
  async kill(index: number): Promise<void> {
    await this.node(index).kill();
  }

  /** Kills one node and starts it again on its port and directory, then waits for the cluster to be whole. */
  async restart(index: number): Promise<void> {
    await this.node(index).restart();
    await this.untilReady();
  }

  async stop(): Promise<void> {
    await Promise.all(this.servers.map((server) => server.stop()));
  }

  /** Which node (by index) serves the slot of a key now, e.g. to restart the master a queue lives on. */
  async nodeOf(key: string): Promise<number> {
    const probe = new Redis(this.node(0).url, { maxRetriesPerRequest: 0, retryStrategy: () => null });
    try {
      const slot = z.number().parse(await probe.call("CLUSTER", "KEYSLOT", key));
      const ranges = clusterSlotsReply.parse(await probe.call("CLUSTER", "SLOTS"));
      const owner = ranges.find(([first, last]) => first <= slot && slot <= last)?.[2][1];
      const index = this.servers.findIndex((server) => server.port === owner);
      if (index < 0) throw new Error(`no node of ${this.nodesEnv} serves slot ${slot} of ${key}`);
      return index;
    } finally {
      probe.disconnect();
    }
  }

  /** Resolves once every node answers `cluster_state:ok` and sees every other node connected. */
  async untilReady(timeoutMs = READY_TIMEOUT_MS): Promise<void> {
    const deadline = Date.now() + timeoutMs;
    let last = "not asked yet";
    while (Date.now() < deadline) {
      const states = await Promise.all(this.servers.map((server) => clusterState(server.url)));
      if (states.every((state) => state === "ok")) return;
      last = states.join(", ");
      await new Promise((resolve) => setTimeout(resolve, 100));
    }
    throw new Error(`Redis Cluster ${this.nodesEnv} not ready after ${timeoutMs} ms: ${last}`);
  }
}

/** CLUSTER SLOTS: [first slot, last slot, [host, port, node id, ...] of the master, ...its replicas]. */
const clusterSlotsReply = z.array(
  z.tuple([z.number(), z.number(), z.tuple([z.string(), z.number()]).rest(z.unknown())]).rest(z.unknown()),
);

/** Redis Cluster's bus port of a node: its port + 10000. */
const BUS_PORT_OFFSET = 10_000;
/** Linux's ephemeral ports start here: outgoing connections take ports from 32768 up, any of them at any time. */
const EPHEMERAL_PORTS_FROM = 32_768;

/**
 * One node on a free port whose bus port lies below the ephemeral range (an outgoing connection cannot take it
 * first); another port is tried when the bus port is taken all the same.
 */
async function startNode(options: RedisClusterOptions): Promise<RedisServerProcess> {
  for (let attempt = 1; ; attempt += 1) {
    try {
      const port = await nodePort();
      return await RedisServerProcess.start({ cluster: true, port, appendfsync: options.appendfsync });
    } catch (error) {
      if (!(error instanceof RedisServerStartError) || attempt >= NODE_START_ATTEMPTS) throw error;
    }
  }
}

async function nodePort(): Promise<number> {
  for (;;) {
    const port = await freePort();
    if (port + BUS_PORT_OFFSET < EPHEMERAL_PORTS_FROM) return port;
  }
}

/** `ok` when the node says `cluster_state:ok` and knows every node it has as connected, else what it says. */
async function clusterState(url: string): Promise<string> {
  const probe = new Redis(url, { lazyConnect: true, maxRetriesPerRequest: 0, retryStrategy: () => null });
  probe.on("error", () => undefined);
  try {
    await probe.connect();
    const info = String(await probe.call("CLUSTER", "INFO"));
    const state = /cluster_state:(\w+)/.exec(info)?.[1] ?? "unknown";
    const known = Number(/cluster_known_nodes:(\d+)/.exec(info)?.[1] ?? 0);
    const nodes = String(await probe.call("CLUSTER", "NODES"))
      .split("\n")
      .filter((line) => line.trim().length > 0);
    const allConnected = nodes.every((line) => line.includes(" connected"));
    return state === "ok" && allConnected && nodes.length === known ? "ok" : state;
  } catch (error) {
    return error instanceof Error ? error.message : "unreachable";
  } finally {
    probe.disconnect();
  }
}
