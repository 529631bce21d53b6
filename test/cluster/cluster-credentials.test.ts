import { Redis } from "ioredis";
import { afterAll, beforeAll, describe, expect, inject, it } from "vitest";
import { openRedisClient } from "../../libs/redis/connections.js";
import type { RedisClient } from "../../libs/redis/redis-client.js";

const USER = "lampline-cluster-user";
const nodes = inject("redisClusterNodes");
const opened: RedisClient[] = [];

/** Runs one command on every master directly (ACL users are per node). */
async function onEveryNode(command: string, ...args: string[]): Promise<void> {
  for (const node of nodes) {
    const direct = new Redis(node.port, node.host);
    await direct.call(command, ...args);
    direct.disconnect();
  }
}

beforeAll(() => onEveryNode("ACL", "SETUSER", USER, "on", ">s3cret:pw", "~*", "&*", "+@all"));
afterAll(async () => {
  for (const client of opened.splice(0)) client.disconnect();
  await onEveryNode("ACL", "DELUSER", USER);
});

function clusterClient(url: string): RedisClient {
  const client = openRedisClient(url, nodes, { maxRetriesPerRequest: 0, retryStrategy: () => null });
  client.on("error", () => undefined); // the refused case fails its command; its error event is expected
  opened.push(client);
  return client;
}

describe("Redis Cluster credentials come from REDIS_URL", () => {
  it("the URL's user and password (percent-encoded) authenticate every node's connection", async () => {
    const client = clusterClient(`redis://${USER}:s3cret%3Apw@unused:1`);
    expect(await client.call("ACL", "WHOAMI")).toBe(USER);
    // Keys in different slots: the client reaches more than one node with the same credentials.
    await Promise.all(["a", "b", "c", "d"].map((key) => client.set(`credentials-test:${key}`, key)));
    expect(
      await Promise.all(["a", "b", "c", "d"].map((key) => client.get(`credentials-test:${key}`))),
    ).toEqual(["a", "b", "c", "d"]);
    await Promise.all(["a", "b", "c", "d"].map((key) => client.del(`credentials-test:${key}`)));
  });

  it("a wrong password is refused, not silently replaced by the default user", async () => {
    const client = clusterClient(`redis://${USER}:wrong@unused:1`);
    await expect(client.get("credentials-test:a")).rejects.toThrow();
  });
});
