import type { CrashPoint } from "./config.js";

/**
 * Fault tests kill the process at a named point to prove that a crash there never yields a second utterance.
 * The configuration only carries a crash point when NODE_ENV=test.
 */
export function crashIfAt(configured: CrashPoint | undefined, point: CrashPoint): void {
  if (configured === point) process.kill(process.pid, "SIGKILL");
}
