import { readdirSync } from "node:fs";
import { join, relative } from "node:path";
import { HARNESS_KEY_INCLUDES } from "../../libs/harness-store/harness-keys.js";
import { OS_KEY_INCLUDES } from "../../libs/os-store/os-keys.js";
import { AGENT_KEY_INCLUDES } from "../../libs/redis/agent-keys.js";
import { layoutSuffixes } from "../../libs/redis/key-layout.js";

/** The generated key includes: the one place Lua may spell a layout's suffixes. */
export const KEY_INCLUDES = [...OS_KEY_INCLUDES, ...HARNESS_KEY_INCLUDES, ...AGENT_KEY_INCLUDES];

const SKIPPED_DIRS = new Set(["node_modules", ".git", ".tmp", "coverage", "dist"]);

/** Every `.lua` file under `root`, relative to it, sorted. */
export function luaFiles(root: string): string[] {
  const found: string[] = [];
  const walk = (dir: string) => {
    for (const entry of readdirSync(dir, { withFileTypes: true })) {
      if (entry.isDirectory() && !SKIPPED_DIRS.has(entry.name)) walk(join(dir, entry.name));
      if (entry.isFile() && entry.name.endsWith(".lua")) found.push(relative(root, join(dir, entry.name)));
    }
  };
  walk(root);
  return found.sort();
}

/** The source without its comments, so a header that says what ARGV held is not a finding. */
function code(source: string): string[] {
  return source
    .replace(/--\[(=*)\[[\s\S]*?\]\1\]/g, "")
    .split("\n")
    .map((line) => line.replace(/--.*$/, ""));
}

/**
 * Where a Lua source breaks the script conventions: an argument read by position (anything but the one JSON object
 * in `ARGV[1]`), or a key suffix of a layout spelled by hand (`':run:'`) instead of through its generated include.
 */
export function luaConventionFindings(source: string, suffixes: readonly string[]): string[] {
  const known = new Set(suffixes);
  const findings: string[] = [];
  code(source).forEach((line, index) => {
    for (const match of line.matchAll(/#\s*ARGV|ARGV(?!\s*\[\s*1\s*\])/g))
      findings.push(`line ${index + 1}: positional argument ${match[0]}`);
    for (const match of line.matchAll(/(['"]):([a-z][a-z0-9:-]*?):?\1/g))
      if (known.has(match[2] as string)) findings.push(`line ${index + 1}: hand-spelled key ${match[0]}`);
  });
  return findings;
}

/** Every layout suffix the generated includes know. */
export function knownSuffixes(): string[] {
  return [...new Set(KEY_INCLUDES.flatMap((include) => layoutSuffixes(include.layout)))];
}
