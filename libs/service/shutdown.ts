import { errorMessage } from "../errors/error-message.js";

const SIGNALS = ["SIGTERM", "SIGINT", "SIGHUP"] as const;
const ORPHAN_CHECK_MS = 1_000;

/**
 * SIGTERM, SIGINT or SIGHUP runs `drain` once and exits 0 when it finished within `timeoutMs`, 1 otherwise. A
 * further signal while draining is ignored: Ctrl-C reaches npm, tsx and node at once and npm forwards it again,
 * and a second signal must not cut the drain short (that is how Redis used to stop before the services).
 */
export function drainOnSignals(processName: string, drain: () => Promise<void>, timeoutMs: number): void {
  let draining = false;
  const parent = process.ppid;
  const onSignal = (signal: NodeJS.Signals) => {
    if (draining) return;
    draining = true;
    const started = Date.now();
    const cause = signal === "SIGHUP" && process.ppid !== parent ? "parent exited" : signal;
    process.stderr.write(`${processName}: ${cause}, draining (deadline ${timeoutMs} ms)\n`);
    const deadline = setTimeout(() => {
      process.stderr.write(`${processName}: not drained within ${timeoutMs} ms; exiting anyway\n`);
      process.exit(1);
    }, timeoutMs);
    drain().then(
      () => {
        clearTimeout(deadline);
        process.stderr.write(`${processName}: stopped in ${Date.now() - started} ms\n`);
        process.exit(0);
      },
      (error: unknown) => {
        process.stderr.write(`${processName}: drain failed: ${errorMessage(error)}\n`);
        process.exit(1);
      },
    );
  };
  for (const signal of SIGNALS) process.on(signal, onSignal);
  // A parent that died without passing a signal on (npm killed, a shell without exec) reparents us: stop too.
  const orphanWatch = setInterval(() => {
    if (process.ppid === parent) return;
    clearInterval(orphanWatch);
    onSignal("SIGHUP");
  }, ORPHAN_CHECK_MS);
  orphanWatch.unref();
}
