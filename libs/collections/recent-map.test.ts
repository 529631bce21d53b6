import { describe, expect, it } from "vitest";
import { RecentMap } from "./recent-map.js";

describe("RecentMap", () => {
  it("keeps only its capacity of entries, forgetting the one set longest ago", () => {
    const recent = new RecentMap<string, number>(2);
    recent.set("a", 1);
    recent.set("b", 2);
    recent.set("c", 3);
    expect(recent.has("a")).toBe(false);
    expect([recent.get("b"), recent.get("c")]).toEqual([2, 3]);
  });

  it("setting a key again makes it the most recent", () => {
    const recent = new RecentMap<string, number>(2);
    recent.set("a", 1);
    recent.set("b", 2);
    recent.set("a", 10);
    recent.set("c", 3);
    expect(recent.has("b")).toBe(false);
    expect([recent.get("a"), recent.get("c")]).toEqual([10, 3]);
  });

  it("a deleted key is gone and frees its place", () => {
    const recent = new RecentMap<string, number>(2);
    recent.set("a", 1);
    recent.set("b", 2);
    recent.delete("a");
    recent.set("c", 3);
    expect(recent.get("a")).toBeUndefined();
    expect([recent.get("b"), recent.get("c")]).toEqual([2, 3]);
  });
});
