import { describe, expect, it } from "vitest";
import { partitionOf } from "./partitions.js";

describe("partitionOf", () => {
  it("is stable and spreads ids over every partition", () => {
    expect(partitionOf("lamp-1", 8)).toBe(partitionOf("lamp-1", 8));
    const counts = new Array<number>(8).fill(0);
    for (let i = 0; i < 8_000; i += 1) {
      const partition = partitionOf(`lamp-${i}`, 8);
      counts[partition] = (counts[partition] ?? 0) + 1;
    }
    for (const count of counts) expect(count).toBeGreaterThan(800);
  });

  it("puts everything in partition 0 when there is one", () => {
    expect(partitionOf("anything", 1)).toBe(0);
  });

  it("refuses a count that is not a positive integer", () => {
    expect(() => partitionOf("x", 0)).toThrow(RangeError);
  });
});
