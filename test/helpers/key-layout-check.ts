import { readFileSync } from "node:fs";
import { expect } from "vitest";
import { keyUnder, keyWithId, luaKeyIncludePath, renderLuaKeyInclude } from "../../libs/redis/key-layout.js";
import type { KeyLayout, LuaKeyInclude } from "../../libs/redis/key-layout.js";

/** The key names a layout class answers: each getter read, each per-id method called with `<id>`. */
export function classKeys(instance: object): Record<string, unknown> {
  const prototype = Object.getPrototypeOf(instance) as object;
  const names = Object.getOwnPropertyNames(prototype).filter((name) => name !== "constructor");
  const members = instance as Record<string, unknown>;
  return Object.fromEntries(
    names.map((name) => {
      const member = members[name];
      return [
        name,
        typeof member === "function" ? (member as (id: string) => string).call(instance, "<id>") : member,
      ];
    }),
  );
}

/** What the layout table says each of those keys is, under the same base. */
export function layoutKeys(base: string, layout: KeyLayout): Record<string, string> {
  return Object.fromEntries(
    Object.entries(layout).map(([name, entry]) => [
      name,
      entry.id === undefined ? keyUnder(base, entry) : keyWithId(base, entry, "<id>"),
    ]),
  );
}

/** The committed include is what `npm run lua:keys` renders from the layout now. */
export function expectCommittedInclude(include: LuaKeyInclude): void {
  const committed = readFileSync(luaKeyIncludePath(include), "utf8");
  expect(committed, `${include.file} is stale: run npm run lua:keys`).toBe(renderLuaKeyInclude(include));
}
