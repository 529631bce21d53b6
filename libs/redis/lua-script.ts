import { createHash } from "node:crypto";
import { existsSync, readFileSync } from "node:fs";
import { basename, dirname, join } from "node:path";
import { fileURLToPath } from "node:url";
import type { RedisClient } from "./redis-client.js";
import { z } from "zod";

const FILE_NAME = /^([a-z][a-z0-9-]*)-(\d+)\.lua$/;
const INCLUDE = /^--!include ([a-z][a-z0-9-]*\.lua)$/gm;
const JSON_REPLY = z.string();
const INCLUDES_DIR = fileURLToPath(new URL("./lua-includes/", import.meta.url));

/** Thrown when a script answers something its reply schema does not allow: a Lua change the caller missed. */
export class LuaReplyError extends Error {
  constructor(scriptName: string, reply: unknown, issues: string) {
    super(`${scriptName} replied ${JSON.stringify(reply)}: ${issues}`);
    this.name = "LuaReplyError";
  }
}

/**
 * Inlines `--!include <file>.lua` lines: the shared pieces in `libs/redis/lua-includes/` (or beside the script),
 * once each, so a rule written in Lua (the receipt-state rank, "record once") has one home.
 */
function withIncludes(source: string, scriptDir: string, seen = new Set<string>()): string {
  return source.replace(INCLUDE, (_line, file: string) => {
    if (seen.has(file)) return "";
    seen.add(file);
    const path = [join(scriptDir, file), join(INCLUDES_DIR, file)].find((candidate) => existsSync(candidate));
    if (path === undefined) throw new Error(`Lua include not found: ${file} (from ${scriptDir})`);
    return withIncludes(readFileSync(path, "utf8"), dirname(path), seen).trimEnd();
  });
}

function loadScriptFile(file: URL | string): { name: string; numberOfKeys: number; source: string } {
  const path = file instanceof URL ? fileURLToPath(file) : file;
  const match = FILE_NAME.exec(basename(path));
  if (!match) throw new Error(`Lua script file name must be <name>-<numberOfKeys>.lua: ${path}`);
  return {
    name: match[1] as string,
    numberOfKeys: Number(match[2]),
    source: withIncludes(readFileSync(path, "utf8"), dirname(path)),
  };
}

/**
 * A Redis-side atomic step kept as a named file next to the service that owns it: `name-<numberOfKeys>.lua`.
 * Its version is the SHA-1 of its source (includes inlined), so a changed script is a new version and never a
 * stale cache hit. Its reply is parsed with the schema it was declared with: callers get types, not casts.
 */
export class LuaScript<Reply extends z.ZodType> {
  readonly sha: string;

  private constructor(
    readonly name: string,
    readonly numberOfKeys: number,
    readonly source: string,
    private readonly reply: Reply,
  ) {
    this.sha = createHash("sha1").update(source).digest("hex");
  }

  static fromFile<Reply extends z.ZodType>(file: URL | string, reply: Reply): LuaScript<Reply> {
    const { name, numberOfKeys, source } = loadScriptFile(file);
    return new LuaScript(name, numberOfKeys, source, reply);
  }

  get version(): string {
    return this.sha.slice(0, 12);
  }

  async run(
    redis: RedisClient,
    keys: readonly string[],
    args: ReadonlyArray<string | number>,
  ): Promise<z.infer<Reply>> {
    if (keys.length !== this.numberOfKeys) {
      throw new Error(`${this.name} takes ${this.numberOfKeys} keys, got ${keys.length}`);
    }
    const raw = await this.call(redis, keys, args);
    const parsed = this.reply.safeParse(raw);
    if (!parsed.success) throw new LuaReplyError(this.name, raw, parsed.error.message);
    return parsed.data;
  }

  private async call(
    redis: RedisClient,
    keys: readonly string[],
    args: ReadonlyArray<string | number>,
  ): Promise<unknown> {
    try {
      return await redis.evalsha(this.sha, keys.length, ...keys, ...args);
    } catch (error) {
      if (!(error instanceof Error) || !error.message.startsWith("NOSCRIPT")) throw error;
      return redis.eval(this.source, keys.length, ...keys, ...args);
    }
  }
}

/**
 * A Lua step with named arguments and a named reply: the script reads `cjson.decode(ARGV[1])` (one JSON object, every
 * field by name; absent fields are left out, never null) and answers `cjson.encode({...})`, which is decoded and
 * parsed with the reply schema (a discriminated union where the step has several outcomes). Keys still go in KEYS.
 */
export class NamedLuaScript<Args extends object, Reply extends z.ZodType> {
  private readonly script: LuaScript<z.ZodString>;

  private constructor(
    script: LuaScript<z.ZodString>,
    private readonly reply: Reply,
  ) {
    this.script = script;
  }

  static fromFile<Args extends object, Reply extends z.ZodType>(
    file: URL | string,
    reply: Reply,
  ): NamedLuaScript<Args, Reply> {
    return new NamedLuaScript<Args, Reply>(LuaScript.fromFile(file, JSON_REPLY), reply);
  }

  get name(): string {
    return this.script.name;
  }

  get numberOfKeys(): number {
    return this.script.numberOfKeys;
  }

  get source(): string {
    return this.script.source;
  }

  get sha(): string {
    return this.script.sha;
  }

  async run(redis: RedisClient, keys: readonly string[], args: Args): Promise<z.infer<Reply>> {
    const raw = await this.script.run(redis, keys, [JSON.stringify(args)]);
    let decoded: unknown;
    try {
      decoded = JSON.parse(raw);
    } catch {
      throw new LuaReplyError(this.script.name, raw, "not a JSON reply");
    }
    const parsed = this.reply.safeParse(decoded);
    if (!parsed.success) throw new LuaReplyError(this.script.name, decoded, parsed.error.message);
    return parsed.data;
  }
}
