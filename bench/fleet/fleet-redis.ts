import { Redis } from "ioredis";
import { parseClientList, type RedisClientLine } from "./redis-clients.js";

/** What the servers report now, summed over every node. */
export interface RedisSnapshot {
  usedMemory: number;
  commandsProcessed: number;
  connectedClients: number;
  /** Calls so far per command (INFO commandstats), summed over the nodes. */
  calls: Record<string, number>;
}

function field(info: string, name: string): number {
  const match = new RegExp(`^${name}:(\\d+)`, "m").exec(info);
  if (!match) throw new Error(`INFO has no ${name}`);
  return Number(match[1]);
}

/**
 * The bench's own view of the Redis under test: one observer connection per node (one for a single server, one per
 * master of a cluster), reading CLIENT LIST and INFO on each and adding them up. Its own connections are left out.
 */
export class FleetRedis {
  private constructor(private readonly nodes: readonly Redis[]) {}

  static async connect(urls: readonly string[]): Promise<FleetRedis> {
    const nodes = urls.map((url) => new Redis(url, { maxRetriesPerRequest: null }));
    await Promise.all(nodes.map((node) => node.ping()));
    return new FleetRedis(nodes);
  }

  /** Every client of every node but the observer's own. */
  async clients(): Promise<RedisClientLine[]> {
    const perNode = await Promise.all(
      this.nodes.map(async (node) => {
        const ownId = String(await node.client("ID"));
        return parseClientList(String(await node.client("LIST"))).filter((client) => client.id !== ownId);
      }),
    );
    return perNode.flat();
  }

  async snapshot(): Promise<RedisSnapshot> {
    const infos = await Promise.all(this.nodes.map((node) => node.info("everything")));
    const sum = (name: string) => infos.reduce((total, info) => total + field(info, name), 0);
    const calls: Record<string, number> = {};
    for (const info of infos)
      for (const match of info.matchAll(/^cmdstat_([^:]+):calls=(\d+)/gm)) {
        const name = match[1] as string;
        calls[name] = (calls[name] ?? 0) + Number(match[2]);
      }
    return {
      calls,
      usedMemory: sum("used_memory"),
      // INFO itself is a command; the observer's one per node is taken off.
      commandsProcessed: sum("total_commands_processed") - this.nodes.length,
      connectedClients: sum("connected_clients") - this.nodes.length,
    };
  }

  /** Deletes every key on every node (the bench's own private servers only). */
  async flush(): Promise<void> {
    await Promise.all(this.nodes.map((node) => node.flushall()));
  }

  close(): void {
    for (const node of this.nodes) node.disconnect();
  }
}
