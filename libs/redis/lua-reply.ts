import { z } from "zod";

/**
 * A list in a Lua step's JSON reply. Redis's cjson cannot tell an empty Lua table from an empty object and encodes it
 * as `{}`, so that reads as the empty list; anything else must be a JSON array of `item`.
 */
export function luaList<Item extends z.ZodType>(item: Item) {
  return z.union([
    z.array(item),
    z
      .object({})
      .strict()
      .transform((): z.infer<Item>[] => []),
  ]);
}
