import { existsSync } from "node:fs";
import { dirname, join, resolve } from "node:path";
import { fileURLToPath } from "node:url";

const projectRoot = resolve(dirname(fileURLToPath(import.meta.url)), "../..");

/** The shared corpus lives outside the project (`../shared/corpus`, or CORPUS_DIR); it is never copied in. */
export const corpusDir = process.env.CORPUS_DIR ?? join(projectRoot, "..", "shared", "corpus");

export const corpusAvailable = existsSync(corpusDir);

export const corpusSkipReason = `corpus not found at ${corpusDir} (set CORPUS_DIR); corpus replay tests skipped`;

if (!corpusAvailable) process.stderr.write(`[lampline tests] ${corpusSkipReason}\n`);

export function corpusPath(...parts: string[]): string {
  return join(corpusDir, ...parts);
}
