import { readFileSync, writeFileSync } from "node:fs";
import { z } from "zod";

const stateSchema = z.strictObject({ starts: z.number().int().nonnegative() });

/**
 * Which runtime this process start plays: the number of earlier starts recorded in the state file (0 without one).
 * The count is bumped before anything is played, so a crash mid-runtime still moves the next start forward.
 */
export function nextRuntimeIndex(path: string | undefined): number {
  if (!path) return 0;
  let starts = 0;
  try {
    starts = stateSchema.parse(JSON.parse(readFileSync(path, "utf8"))).starts;
  } catch (error) {
    if ((error as NodeJS.ErrnoException).code !== "ENOENT") throw error;
  }
  writeFileSync(path, JSON.stringify({ starts: starts + 1 }));
  return starts;
}
