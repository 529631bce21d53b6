import { z } from "zod";

/**
 * A list in a JSON reply from Lua: cjson encodes an empty table as `{}`, so an empty list arrives as an empty
 * object and is read as `[]`; anything else must be the list itself.
 */
export function luaList<Item extends z.ZodType>(item: Item) {
  return z.preprocess(
    (value) =>
      typeof value === "object" && value !== null && !Array.isArray(value) && Object.keys(value).length === 0
        ? []
        : value,
    z.array(item),
  );
}
