import { Redis } from "ioredis";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { RedisConnections } from "../../libs/redis/connections.js";
import { RedisClusterProcess } from "../../libs/redis/redis-cluster-process.js";
import { testLog, uniquePrefix } from "../helpers/test-redis.js";
import { CLUSTER_MASTERS } from "./cluster-profile.js";

/** A cluster of its own: the test kills the node its subscriber is on. */
let cluster: RedisClusterProcess;
let connections: RedisConnections;

beforeAll(async () => {
  cluster = await RedisClusterProcess.start({ masters: CLUSTER_MASTERS });
  connections = new RedisConnections("redis://cluster", testLog, { clusterNodes: cluster.nodes });
}, 60_000);
afterAll(async () => {
  await connections?.close();
  await cluster?.stop();
});

/** The index of the node holding a connection of this name (a dead node holds none). */
async function nodeHolding(name: string): Promise<number> {
  for (const [index, node] of cluster.nodes.entries()) {
    const direct = new Redis(node.port, node.host, { maxRetriesPerRequest: 0, retryStrategy: () => null });
    direct.on("error", () => undefined);
    const clients = await direct.client("LIST").then(String, () => "");
    direct.disconnect();
    if (clients.includes(` name=${name} `)) return index;
  }
  throw new Error(`no node holds a connection named ${name}`);
}

describe("a subscriber on Redis Cluster", () => {
  it("when its node dies it subscribes on another, says so, and hears what any node publishes", async () => {
    const purpose = uniquePrefix("cluster-subscriber");
    const channel = `${purpose}:wake`;
    const subscriber = connections.subscriber(purpose);
    await subscriber.subscribe(channel);
    const heard: string[] = [];
    subscriber.onMessage((_channel, message) => heard.push(message));

    const first = await nodeHolding(`lampline:${purpose}`);
    const resubscribed = new Promise<void>((resolve) => subscriber.onResubscribed(resolve));
    await cluster.kill(first);
    await resubscribed;
    const second = await nodeHolding(`lampline:${purpose}`);
    expect(second).not.toBe(first);

    const message = new Promise<string>((resolve) => subscriber.onMessage((_c, text) => resolve(text)));
    // Published through a node the subscriber is not on: the cluster bus carries it.
    const via = cluster.nodes.findIndex((_, index) => index !== first && index !== second);
    const direct = new Redis(cluster.node(via).url);
    await direct.publish(channel, "after the move");
    direct.disconnect();
    expect(await message).toBe("after the move");
    expect(heard).toEqual(["after the move"]);
    await cluster.restart(first);
  }, 60_000);
});
