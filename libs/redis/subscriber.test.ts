import { afterEach, beforeEach, describe, expect, it } from "vitest";
import { createTestRedis, type TestRedis } from "../../test/helpers/test-redis.js";
import { freePort } from "./redis-server-process.js";
import { Subscriber } from "./subscriber.js";

let t: TestRedis;
const opened: Subscriber[] = [];

beforeEach(() => {
  t = createTestRedis("subscriber");
});
afterEach(async () => {
  for (const subscriber of opened.splice(0)) subscriber.close();
  await t.cleanup();
});

function subscriber(name: string, addresses: string[] = [t.url]): Subscriber {
  const opening = new Subscriber({ addresses, connectionName: `${t.keys.prefix}:${name}` });
  opened.push(opening);
  return opening;
}

/** Subscriptions Redis holds for the channel now, from another connection. */
async function subscriptionsOf(channel: string): Promise<number> {
  const [, count] = (await t.redis.call("PUBSUB", "NUMSUB", channel)) as [string, number];
  return Number(count);
}

/** Kills the subscriber's connection as a network failure would: by its id, found by its unique name. */
async function killConnection(name: string): Promise<void> {
  const clients = String(await t.redis.client("LIST")).split("\n");
  const line = clients.find((client) => client.includes(` name=${t.keys.prefix}:${name} `));
  const id = /\bid=(\d+)/.exec(line ?? "")?.[1];
  expect(id, `connection ${name}`).toBeDefined();
  expect(await t.redis.client("KILL", "ID", id ?? "")).toBe(1);
}

function nextMessage(from: Subscriber): Promise<[string, string]> {
  return new Promise((resolve) => from.onMessage((channel, message) => resolve([channel, message])));
}

describe("a subscriber", () => {
  it("subscribes as soon as it is constructed, mid-handshake, and hears the next publish", async () => {
    const channel = `${t.keys.prefix}:channel`;
    const listening = subscriber("mid-handshake");
    const message = nextMessage(listening);
    await listening.subscribe(channel);
    expect(listening.subscribed).toBe(true);
    expect(await t.redis.publish(channel, "hello")).toBe(1);
    expect(await message).toEqual([channel, "hello"]);
  });

  it("hears a pattern's channels", async () => {
    const pattern = `${t.keys.prefix}:updates:*`;
    const listening = subscriber("pattern");
    const message = new Promise((resolve) => listening.onPatternMessage((...args) => resolve(args)));
    await listening.psubscribe(pattern);
    await t.redis.publish(`${t.keys.prefix}:updates:lamp-1`, "lamp-1");
    expect(await message).toEqual([pattern, `${t.keys.prefix}:updates:lamp-1`, "lamp-1"]);
  });

  it("after its connection is killed, says so only once Redis holds every subscription again", async () => {
    const channel = `${t.keys.prefix}:wake`;
    const listening = subscriber("killed");
    await listening.subscribe(channel);
    const heldWhenTold = new Promise<number>((resolve) =>
      listening.onResubscribed(() => void subscriptionsOf(channel).then(resolve)),
    );
    await killConnection("killed");
    expect(await heldWhenTold).toBe(1);
    const message = nextMessage(listening);
    await t.redis.publish(channel, "after");
    expect(await message).toEqual([channel, "after"]);
  });

  it("moves to the next address when one does not answer", async () => {
    const channel = `${t.keys.prefix}:moved`;
    const listening = subscriber("next-address", [`redis://127.0.0.1:${await freePort()}`, t.url]);
    await listening.subscribe(channel);
    expect(await subscriptionsOf(channel)).toBe(1);
  });

  it("a subscribe still waiting for a connection fails when the subscriber is closed", async () => {
    const listening = subscriber("closed", [`redis://127.0.0.1:${await freePort()}`]);
    const subscribing = listening.subscribe(`${t.keys.prefix}:never`);
    listening.close();
    await expect(subscribing).rejects.toThrow(/closed/);
  });

  it("stops hearing a channel it unsubscribed, and does not take it back after a reconnect", async () => {
    const [kept, dropped] = [`${t.keys.prefix}:kept`, `${t.keys.prefix}:dropped`];
    const listening = subscriber("unsubscribe");
    await listening.subscribe(kept, dropped);
    await listening.unsubscribe(dropped);
    const back = new Promise<void>((resolve) => listening.onResubscribed(resolve));
    await killConnection("unsubscribe");
    await back;
    expect([await subscriptionsOf(kept), await subscriptionsOf(dropped)]).toEqual([1, 0]);
  });
});
