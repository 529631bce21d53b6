import type { Redis } from "ioredis";

/** One line of CLIENT LIST, the fields the fleet reports read. */
export interface RedisClientLine {
  id: string;
  name: string;
  /** The client's address as Redis sees it (`127.0.0.1:<port>`): the connecting process's local socket. */
  addr: string;
  /** The server's address the client connected to (`laddr`, Redis 6.2+): the connection's other end. */
  laddr: string;
  /** Subscribed channels + patterns (a pub/sub connection). */
  subscriptions: number;
}

export function parseClientList(text: string): RedisClientLine[] {
  return text
    .split("\n")
    .filter((line) => line.trim() !== "")
    .map((line) => {
      const fields = new Map(
        line
          .trim()
          .split(" ")
          .map((pair) => [pair.slice(0, pair.indexOf("=")), pair.slice(pair.indexOf("=") + 1)] as const),
      );
      return {
        id: fields.get("id") ?? "",
        name: fields.get("name") ?? "",
        addr: fields.get("addr") ?? "",
        laddr: fields.get("laddr") ?? "",
        subscriptions: Number(fields.get("sub") ?? 0) + Number(fields.get("psub") ?? 0),
      };
    });
}

/** The server's clients named `lampline:<purpose>`, counted by purpose (the observer's own connection left out). */
export async function lamplineClients(redis: Redis): Promise<Map<string, number>> {
  const ownId = String(await redis.client("ID"));
  const counts = new Map<string, number>();
  for (const client of parseClientList(String(await redis.client("LIST")))) {
    if (client.id === ownId || !client.name.startsWith("lampline:")) continue;
    const purpose = client.name.slice("lampline:".length);
    counts.set(purpose, (counts.get(purpose) ?? 0) + 1);
  }
  return counts;
}

export function total(counts: Map<string, number>): number {
  return [...counts.values()].reduce((sum, count) => sum + count, 0);
}
