import { afterEach, beforeEach, describe, expect, it } from "vitest";
import { z } from "zod";
import { LuaReplyError, LuaScript, NamedLuaScript } from "./lua-script.js";
import { createTestRedis, type TestRedis } from "../../test/helpers/test-redis.js";

const script = LuaScript.fromFile(
  new URL("./test-lua/bounded-increment-1.lua", import.meta.url),
  z.number().int(),
);
const withInclude = LuaScript.fromFile(
  new URL("./test-lua/with-include-1.lua", import.meta.url),
  z.number().int(),
);
/** bounded-increment-1.lua takes its arguments as one JSON object, like every script. */
const bounds = (by: number, limit: number) => JSON.stringify({ by, limit });
let t: TestRedis;

beforeEach(() => {
  t = createTestRedis("lua");
});
afterEach(() => t.cleanup());

describe("Lua scripts as named, versioned units", () => {
  it("takes its name and key count from the file name and its version from the source hash", () => {
    expect(script.name).toBe("bounded-increment");
    expect(script.numberOfKeys).toBe(1);
    expect(script.version).toMatch(/^[0-9a-f]{12}$/);
    expect(script.sha.startsWith(script.version)).toBe(true);
  });

  it("runs atomically on a real Redis, loading itself when the server's script cache is empty", async () => {
    await t.redis.script("FLUSH");
    const key = t.keys.key("counter");
    expect(await script.run(t.redis, [key], [bounds(3, 5)])).toBe(3);
    expect(await script.run(t.redis, [key], [bounds(3, 5)])).toBe(-1);
    expect(await script.run(t.redis, [key], [bounds(2, 5)])).toBe(5);
    expect(await t.redis.get(key)).toBe("5");
  });

  it("refuses a call with the wrong number of keys before touching Redis", async () => {
    await expect(script.run(t.redis, [], [bounds(1, 2)])).rejects.toThrow(
      "bounded-increment takes 1 keys, got 0",
    );
  });

  it("rejects a file whose name does not say its key count", () => {
    expect(() => LuaScript.fromFile("/tmp/no-count.lua", z.unknown())).toThrow("<name>-<numberOfKeys>.lua");
  });

  it("inlines each shared include once and runs the result", async () => {
    expect(withInclude.source.match(/local RECEIPT_RANK/g)).toHaveLength(1);
    expect(withInclude.source).not.toContain("--!include");
    expect(await withInclude.run(t.redis, [t.keys.key("unused")], ["started"])).toBe(2);
    expect(await withInclude.run(t.redis, [t.keys.key("unused")], ["nonsense"])).toBe(-1);
  });

  it("refuses a reply its schema does not allow, naming the script and the reply", async () => {
    const strict = LuaScript.fromFile(
      new URL("./test-lua/bounded-increment-1.lua", import.meta.url),
      z.literal(-1),
    );
    await expect(strict.run(t.redis, [t.keys.key("fresh")], [bounds(1, 5)])).rejects.toThrow(LuaReplyError);
    await expect(strict.run(t.redis, [t.keys.key("fresh2")], [bounds(1, 5)])).rejects.toThrow(
      "bounded-increment replied 1",
    );
  });

  it("passes named arguments as one object and parses the named reply with a discriminated union", async () => {
    const named = NamedLuaScript.fromFile<{ by: number; limit: number }, z.ZodType>(
      new URL("./test-lua/named-increment-1.lua", import.meta.url),
      z.discriminatedUnion("verdict", [
        z.object({ verdict: z.literal("added"), value: z.number().int() }),
        z.object({ verdict: z.literal("refused"), current: z.number().int() }),
      ]),
    );
    const key = t.keys.key("named");
    expect(named.numberOfKeys).toBe(1);
    expect(await named.run(t.redis, [key], { by: 4, limit: 5 })).toEqual({ verdict: "added", value: 4 });
    expect(await named.run(t.redis, [key], { by: 4, limit: 5 })).toEqual({ verdict: "refused", current: 4 });
  });
});
