import { describe, expect, it } from "vitest";
import { DeliveredPlaybacks } from "./delivered-playbacks.js";

describe("DeliveredPlaybacks", () => {
  it("a playbackId is delivered once; a repeated delivery entry of it is refused", () => {
    const delivered = new DeliveredPlaybacks();
    expect(delivered.firstDelivery("answer-1")).toBe(true);
    expect(delivered.firstDelivery("answer-1")).toBe(false);
    expect(delivered.firstDelivery("repeat-1")).toBe(true);
  });

  it("forgets the oldest ids beyond its capacity, keeping the newest", () => {
    const delivered = new DeliveredPlaybacks(2);
    for (const id of ["a", "b", "c"]) delivered.firstDelivery(id);
    expect(delivered.firstDelivery("c")).toBe(false);
    expect(delivered.firstDelivery("a")).toBe(true);
  });
});
