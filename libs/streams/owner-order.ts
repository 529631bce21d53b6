/**
 * Handles every item: one owner's items one after another in the order given, different owners' concurrently.
 * Resolves once every item is done; if any handling threw, it then throws the first error (never while others
 * are still running).
 */
export async function handleInOwnerOrder<T>(
  items: readonly T[],
  ownerOf: (item: T) => string,
  handle: (item: T) => Promise<void>,
): Promise<void> {
  const byOwner = new Map<string, T[]>();
  for (const item of items) {
    const owner = ownerOf(item);
    const queue = byOwner.get(owner);
    if (queue) queue.push(item);
    else byOwner.set(owner, [item]);
  }
  const settled = await Promise.allSettled(
    [...byOwner.values()].map(async (queue) => {
      for (const item of queue) await handle(item);
    }),
  );
  const failed = settled.find((outcome) => outcome.status === "rejected");
  if (failed) throw failed.reason;
}
