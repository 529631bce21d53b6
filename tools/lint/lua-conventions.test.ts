import { readFileSync } from "node:fs";
import { join, relative } from "node:path";
import { describe, expect, it } from "vitest";
import { luaKeyIncludePath } from "../../libs/redis/key-layout.js";
import { projectRoot } from "../../test/helpers/child-process.js";
import { KEY_INCLUDES, knownSuffixes, luaConventionFindings, luaFiles } from "./lua-conventions.js";

const generated = new Set(KEY_INCLUDES.map((include) => relative(projectRoot, luaKeyIncludePath(include))));
const suffixes = knownSuffixes();

describe("every Lua script takes named arguments and names its keys through the generated layout", () => {
  const files = luaFiles(projectRoot).filter((file) => !generated.has(file));

  it("finds the scripts and the layout suffixes (the check is not vacuous)", () => {
    expect(files).toContain("services/device-gateway/lua/register-run-1.lua");
    expect(files).toContain("libs/redis/lua-includes/run-update.lua");
    expect(files).toContain("bench/retained/fill-retained-0.lua");
    expect(suffixes).toEqual(
      expect.arrayContaining(["run", "runs:pending", "res-order", "event-log", "rt", "runner:delivery"]),
    );
  });

  it("no script reads ARGV by position or spells a layout key", () => {
    const offenders = files.flatMap((file) =>
      luaConventionFindings(readFileSync(join(projectRoot, file), "utf8"), suffixes).map(
        (finding) => `${file} ${finding}`,
      ),
    );
    expect(offenders).toEqual([]);
  });
});

describe("the Lua convention check", () => {
  it("names positional arguments and hand-spelled layout keys, line by line", () => {
    const source = [
      "-- ARGV[2] in a comment is no finding",
      "local args = cjson.decode(ARGV[1])",
      "local a, b = ARGV[2], ARGV[index]",
      "for i = 1, #ARGV do end",
      "redis.call('GET', base .. ':run:' .. id)",
      'redis.call("ZCARD", base .. ":runs:pending")',
      "redis.call('GET', base .. ':not-a-layout-key')",
    ].join("\n");
    expect(luaConventionFindings(source, ["run", "runs:pending"])).toEqual([
      "line 3: positional argument ARGV",
      "line 3: positional argument ARGV",
      "line 4: positional argument #ARGV",
      "line 5: hand-spelled key ':run:'",
      'line 6: hand-spelled key ":runs:pending"',
    ]);
  });
});
