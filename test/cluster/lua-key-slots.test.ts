import { readdirSync } from "node:fs";
import { join } from "node:path";
import { Cluster } from "ioredis";
import { afterAll, describe, expect, inject, it } from "vitest";
import { z } from "zod";
import { Keyspace } from "../../libs/redis/keyspace.js";
import { LuaScript } from "../../libs/redis/lua-script.js";
import { projectRoot } from "../helpers/child-process.js";
import { underivedKeys } from "./lua-key-derivation.js";

/** Every `<name>-<keys>.lua` the services and libraries run through LuaScript (includes are inlined into them). */
function scriptFiles(): string[] {
  return ["services", "libs"]
    .flatMap((top) =>
      readdirSync(join(projectRoot, top), { recursive: true, encoding: "utf8" }).map((path) =>
        join(top, path),
      ),
    )
    .filter((path) => /\/lua\/[a-z][a-z0-9-]*-\d+\.lua$/.test(path))
    .sort();
}

describe("every Lua script touches one Redis Cluster slot", () => {
  const files = scriptFiles();

  it("finds the scripts (the check is not vacuous)", () => {
    expect(files.length).toBeGreaterThanOrEqual(20);
    expect(files).toContain("services/tts-dispatcher/lua/playback-claim-1.lua");
  });

  it.each(files)("%s: every key it touches is derived from its KEYS", (file) => {
    const script = LuaScript.fromFile(join(projectRoot, file), z.unknown());
    expect(underivedKeys(script.source)).toEqual([]);
  });

  it("every script takes one key, so each call's KEYS share a slot by construction", () => {
    const keyCounts = files.map(
      (file) => LuaScript.fromFile(join(projectRoot, file), z.unknown()).numberOfKeys,
    );
    expect(new Set(keyCounts)).toEqual(new Set([1]));
  });
});

describe("the key derivation check", () => {
  const findings = (source: string) => underivedKeys(source).map(({ command, key }) => `${command} ${key}`);

  it("accepts KEYS, names bound to them, suffixes, parameters passed them and loops over them", () => {
    const source = `
      local base = KEYS[1]
      local runKey, log = base .. ':run:' .. ARGV[1], base .. ':log'
      local outbox = false
      if ARGV[2] ~= '' then outbox = base .. ':outbox:' .. ARGV[2] end
      local function touch(key, depth)
        redis.call('HSET', key, 'at', ARGV[3])
        if depth > 0 then touch(key, depth - 1) end
      end
      touch(runKey, 2)
      for _, target in ipairs(outbox and {runKey, outbox} or {runKey}) do redis.call('DEL', target, log) end
      redis.call('ZDIFF', 2, base .. ':a', base .. ':b')
      redis.call('XINFO', 'GROUPS', KEYS[1])
      redis.call('PUBLISH', ARGV[4], 'x')`;
    expect(findings(source)).toEqual([]);
  });

  it("names a key from ARGV, a literal, a key read from Redis, a prefix before KEYS and an unknown command", () => {
    const source = `
      local base = KEYS[1]
      redis.call('GET', ARGV[1])
      redis.call('INCR', 'global:counter')
      local pointed = redis.call('GET', base .. ':pointer')
      redis.call('DEL', base .. ':x', pointed)
      redis.call('SET', 'copy:' .. base, 1)
      redis.call('RENAME', base, base .. ':old')`;
    expect(findings(source)).toEqual([
      "GET ARGV [ 1 ]",
      "INCR 'global:counter'",
      "DEL pointed",
      "SET 'copy:' .. base",
      "RENAME (no key rule for this command)",
    ]);
  });

  it("accepts a generated key function on a derived base, and names one on a foreign base", () => {
    const source = `
      local os_keys = {}
      function os_keys.run(base, runId) return base .. ':run:' .. runId end
      function os_keys.runs(base) return base .. ':runs' end
      local base = KEYS[1]
      local runKey = os_keys.run(base, ARGV[1])
      redis.call('HSET', runKey, 'at', 1)
      redis.call('ZADD', os_keys.runs(base) .. ':x', 1, 'r')
      redis.call('DEL', os_keys.run(ARGV[2], 'r'))`;
    expect(findings(source)).toEqual(["DEL os_keys . run ( ARGV [ 2 ] , 'r' )"]);
  });

  it("trusts no function of a table that has one not extending its first argument", () => {
    const source = `
      local keys = {}
      function keys.run(base, runId) return base .. ':run:' .. runId end
      function keys.other(base) return 'global' end
      redis.call('GET', keys.run(KEYS[1], 'r'))`;
    expect(findings(source)).toEqual(["GET keys . run ( KEYS [ 1 ] , 'r' )"]);
  });

  it("names a parameter some call passes a foreign key, and a loop over a list read from Redis", () => {
    const source = `
      local function clear(key) redis.call('DEL', key) end
      clear(KEYS[1] .. ':a')
      clear(ARGV[1])
      for _, member in ipairs(redis.call('SMEMBERS', KEYS[1])) do redis.call('DEL', member) end`;
    expect(findings(source)).toEqual(["DEL key", "DEL member"]);
  });
});

describe("the keys scripts are called with are hash-tagged", () => {
  const cluster = new Cluster(inject("redisClusterNodes"));
  afterAll(() => cluster.disconnect());
  const keys = new Keyspace("slot-check", 4);
  const slot = async (key: string) => Number(await cluster.call("CLUSTER", "KEYSLOT", key));

  it.each([
    ["a device's OS base", keys.osDevice("lamp-1")],
    ["a device's Harness base", keys.harnessDevice("lamp-1")],
    ["an agent's evidence base", keys.agent("claude-1")],
    ["a stream partition", keys.stream("os.routed", 3)],
    ["BullMQ's prefix", keys.bullPrefix],
  ])("%s: a derived key hashes to its base's slot (CLUSTER KEYSLOT)", async (_what, base) => {
    const baseSlot = await slot(base);
    expect(await slot(`${base}:run:r-1`)).toBe(baseSlot);
    expect(await slot(`${base}:outbox:{other}:x`)).toBe(baseSlot);
  });

  it("without the tag, the same suffixes scatter over slots (the check can tell)", async () => {
    const untagged = await Promise.all(
      ["a", "b", "c", "d"].map((suffix) => slot(`slot-check:os:lamp-1:${suffix}`)),
    );
    expect(new Set(untagged).size).toBeGreaterThan(1);
  });
});
