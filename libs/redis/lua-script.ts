import { createHash } from "node:crypto";
import { readFileSync } from "node:fs";
import { basename } from "node:path";
import { fileURLToPath } from "node:url";
import type { Redis } from "ioredis";

const FILE_NAME = /^([a-z][a-z0-9-]*)-(\d+)\.lua$/;

/**
 * A Redis-side atomic step kept as a named file next to the service that owns it: `name-<numberOfKeys>.lua`.
 * Its version is the SHA-1 of its source, so a changed script is a new version and never a stale cache hit.
 */
export class LuaScript {
  readonly sha: string;

  private constructor(
    readonly name: string,
    readonly numberOfKeys: number,
    readonly source: string,
  ) {
    this.sha = createHash("sha1").update(source).digest("hex");
  }

  static fromFile(file: URL | string): LuaScript {
    const path = file instanceof URL ? fileURLToPath(file) : file;
    const match = FILE_NAME.exec(basename(path));
    if (!match) throw new Error(`Lua script file name must be <name>-<numberOfKeys>.lua: ${path}`);
    return new LuaScript(match[1] as string, Number(match[2]), readFileSync(path, "utf8"));
  }

  get version(): string {
    return this.sha.slice(0, 12);
  }

  async run(redis: Redis, keys: readonly string[], args: ReadonlyArray<string | number>): Promise<unknown> {
    if (keys.length !== this.numberOfKeys) {
      throw new Error(`${this.name} takes ${this.numberOfKeys} keys, got ${keys.length}`);
    }
    try {
      return await redis.evalsha(this.sha, keys.length, ...keys, ...args);
    } catch (error) {
      if (!(error instanceof Error) || !error.message.startsWith("NOSCRIPT")) throw error;
      return redis.eval(this.source, keys.length, ...keys, ...args);
    }
  }
}
