import { writeFileSync } from "node:fs";
import { HARNESS_KEY_INCLUDES } from "../libs/harness-store/harness-keys.js";
import { OS_KEY_INCLUDES } from "../libs/os-store/os-keys.js";
import { AGENT_KEY_INCLUDES } from "../libs/redis/agent-keys.js";
import { luaKeyIncludePath, renderLuaKeyInclude } from "../libs/redis/key-layout.js";

/** Rewrites the Lua key includes in libs/redis/lua-includes from the store layouts (`npm run lua:keys`). */
for (const include of [...OS_KEY_INCLUDES, ...HARNESS_KEY_INCLUDES, ...AGENT_KEY_INCLUDES]) {
  const path = luaKeyIncludePath(include);
  writeFileSync(path, renderLuaKeyInclude(include));
  process.stdout.write(`${path}: regenerated\n`);
}
