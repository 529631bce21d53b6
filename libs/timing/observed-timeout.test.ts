import { performance } from "node:perf_hooks";
import { describe, expect, it } from "vitest";
import { setObservedTimeout } from "./observed-timeout.js";
import { STALL_MS } from "./stall.js";

const TIMEOUT_MS = 100;

/** Blocks the event loop, as a long GC or a stopped process does to every timer. */
function blockEventLoop(ms: number): number {
  const until = performance.now() + ms;
  while (performance.now() < until);
  return performance.now();
}

describe("setObservedTimeout", () => {
  it("fires after its delay when the process ran throughout", async () => {
    const armedAt = performance.now();
    const firedAt = await new Promise<number>((fired) =>
      setObservedTimeout(() => fired(performance.now()), TIMEOUT_MS),
    );
    expect(firedAt - armedAt).toBeGreaterThanOrEqual(TIMEOUT_MS - 1);
  });

  it("after the event loop was blocked past its deadline, waits its delay again instead of firing at once", async () => {
    const fired = new Promise<number>((resolve) =>
      setObservedTimeout(() => resolve(performance.now()), TIMEOUT_MS),
    );
    const resumedAt = blockEventLoop(TIMEOUT_MS + STALL_MS + 100);
    expect((await fired) - resumedAt).toBeGreaterThanOrEqual(TIMEOUT_MS - 1);
  });
});
