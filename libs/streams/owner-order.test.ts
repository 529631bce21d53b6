import { expect, it } from "vitest";
import { handleInOwnerOrder } from "./owner-order.js";

interface Item {
  owner: string;
  n: number;
}

/** A handler that records when each item starts and ends, and finishes them in the order `release` is called. */
function recorder() {
  const events: string[] = [];
  const waiting = new Map<number, () => void>();
  const handle = async (item: Item) => {
    events.push(`start ${item.n}`);
    await new Promise<void>((resolve) => waiting.set(item.n, resolve));
    events.push(`end ${item.n}`);
  };
  const release = async (n: number) => {
    while (!waiting.has(n)) await new Promise((resolve) => setImmediate(resolve));
    waiting.get(n)?.();
    waiting.delete(n);
  };
  return { events, handle, release };
}

it("starts every owner's first item at once and one owner's next only when its previous one ended", async () => {
  const items = [
    { owner: "a", n: 1 },
    { owner: "b", n: 2 },
    { owner: "a", n: 3 },
  ];
  const { events, handle, release } = recorder();
  const done = handleInOwnerOrder(items, (item) => item.owner, handle);
  await release(2);
  await release(1);
  await release(3);
  await done;
  expect(events).toEqual(["start 1", "start 2", "end 2", "end 1", "start 3", "end 3"]);
});

it("throws the first failure only once every other owner's items are done", async () => {
  const handled: number[] = [];
  const outcome = handleInOwnerOrder(
    [
      { owner: "a", n: 1 },
      { owner: "b", n: 2 },
      { owner: "b", n: 3 },
    ],
    (item) => item.owner,
    async (item) => {
      if (item.n === 1) throw new Error("first failed");
      await new Promise((resolve) => setImmediate(resolve));
      handled.push(item.n);
    },
  );
  await expect(outcome).rejects.toThrow("first failed");
  expect(handled).toEqual([2, 3]);
});
