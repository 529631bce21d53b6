import { expect, it } from "vitest";
import { freePort, useFreePortSlice } from "./redis-server-process.js";

it("never hands out a port twice in one process, and says so when its slice is used up", async () => {
  // 12,000 ports in 1,000 slices: this one holds 12 (30,800–30,811), outside the slices test workers draw from.
  useFreePortSlice(900, 1_000);
  const ports: number[] = [];
  for (;;) {
    const next = await freePort().catch((error: unknown) => error);
    if (next instanceof Error) {
      expect(next.message).toMatch(/^no free port between 30800 and 30812$/);
      break;
    }
    ports.push(Number(next));
  }
  // Ports another process holds are skipped; every other one of the 12 is handed out exactly once.
  expect(ports.length).toBeGreaterThan(0);
  expect(new Set(ports).size).toBe(ports.length);
  expect(ports.every((port) => port >= 30_800 && port < 30_812)).toBe(true);
});
