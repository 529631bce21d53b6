import { readdirSync, readFileSync } from "node:fs";
import { join, relative } from "node:path";
import { describe, expect, it } from "vitest";
import { projectRoot } from "../helpers/child-process.js";

/** Code that runs in a deployment or on a laptop; tests and their fixtures may read what they like. */
const CODE_DIRS = ["libs", "services", "tools", "bench"];

function sourceFiles(dir: string): string[] {
  return readdirSync(dir, { withFileTypes: true }).flatMap((entry) => {
    const path = join(dir, entry.name);
    if (entry.isDirectory()) return sourceFiles(path);
    return entry.name.endsWith(".ts") && !entry.name.endsWith(".test.ts") ? [path] : [];
  });
}

/**
 * Environment names as the code reads them: keys of the config schemas (`NAME: envInt(…)`, `NAME: z.…`,
 * `NAME: envJwtSecret`, the zod objects every `parseConfig`/`loadConfigOrExit` is given), and direct reads
 * (`env.NAME`, `process.env.NAME`, `env["NAME"]`).
 */
/** The operating system's own variables, read as every program reads them: not ours to document. */
const PLATFORM_VARIABLES = new Set(["PATH", "HOME", "TMPDIR", "XDG_CACHE_HOME"]);

const SCHEMA_KEY = /^\s*([A-Z][A-Z0-9_]+):\s*(?:z\.|env[A-Z]\w*)/gm;
const DIRECT_READ = /\benv(?:\.([A-Z][A-Z0-9_]+)\b|\[["']([A-Z][A-Z0-9_]+)["']\])/g;

function environmentNames(): Map<string, string> {
  const names = new Map<string, string>();
  for (const file of CODE_DIRS.flatMap((dir) => sourceFiles(join(projectRoot, dir)))) {
    const text = readFileSync(file, "utf8");
    const where = relative(projectRoot, file);
    for (const match of text.matchAll(SCHEMA_KEY)) names.set(match[1] ?? "", where);
    for (const match of text.matchAll(DIRECT_READ)) names.set(match[1] ?? match[2] ?? "", where);
  }
  return names;
}

describe("the README", () => {
  it("lists every environment variable the code reads", () => {
    const names = environmentNames();
    // The config schemas of every service and of the shared libraries are found.
    for (const known of [
      "REDIS_URL",
      "AUTH_JWT_SECRET",
      "PLAYBACK_ACK_TIMEOUT_MS",
      "SHUTDOWN_TIMEOUT_MS",
      "SERVICE",
    ])
      expect(names.has(known), known).toBe(true);
    const readme = readFileSync(join(projectRoot, "README.md"), "utf8");
    const unlisted = [...names].filter(
      ([name]) => !PLATFORM_VARIABLES.has(name) && !readme.includes(`\`${name}\``),
    );
    expect(unlisted.map(([name, file]) => `${name} (read in ${file})`)).toEqual([]);
  });

  it("names the prerequisites: Node 20.19+, redis-server unless REDIS_URL is set, espeak-ng optional", () => {
    const readme = readFileSync(join(projectRoot, "README.md"), "utf8");
    expect(readme).toMatch(/Prerequisites: Node\.js 20\.19 or newer; `redis-server` on the PATH/);
    expect(readme).toMatch(/unless\s+`REDIS_URL` names a running Redis/);
    expect(readme).toMatch(/espeak-ng is optional/);
    expect(readme.indexOf("npm run demo")).toBeLessThan(readme.indexOf("npm start"));
  });
});
