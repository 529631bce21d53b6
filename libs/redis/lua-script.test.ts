import { afterEach, beforeEach, describe, expect, it } from "vitest";
import { LuaScript } from "./lua-script.js";
import { createTestRedis, type TestRedis } from "../../test/helpers/test-redis.js";

const script = LuaScript.fromFile(new URL("./test-lua/bounded-increment-1.lua", import.meta.url));
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
    expect(await script.run(t.redis, [key], [3, 5])).toBe(3);
    expect(await script.run(t.redis, [key], [3, 5])).toBe(-1);
    expect(await script.run(t.redis, [key], [2, 5])).toBe(5);
    expect(await t.redis.get(key)).toBe("5");
  });

  it("refuses a call with the wrong number of keys before touching Redis", async () => {
    await expect(script.run(t.redis, [], [1, 2])).rejects.toThrow("bounded-increment takes 1 keys, got 0");
  });

  it("rejects a file whose name does not say its key count", () => {
    expect(() => LuaScript.fromFile("/tmp/no-count.lua")).toThrow("<name>-<numberOfKeys>.lua");
  });
});
