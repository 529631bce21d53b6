import { describe, expect, it } from "vitest";
import { z } from "zod";
import { luaList } from "./lua-list.js";

describe("a list in a JSON reply from Lua", () => {
  const list = luaList(z.string());

  it("reads the empty object cjson makes of an empty table as an empty list", () => {
    expect(list.parse({})).toEqual([]);
  });

  it("reads a list as itself and refuses an object with fields", () => {
    expect(list.parse(["run-1", "run-2"])).toEqual(["run-1", "run-2"]);
    expect(list.safeParse({ runId: "run-1" }).success).toBe(false);
  });
});
