import { errorMessage } from "../errors/error-message.js";
import type { Logger } from "../logging/logger.js";

/**
 * Runs `sweep` every `intervalMs`, one at a time (a slow sweep delays the next, never overlaps it); errors are
 * logged and the next round tries again. `stop` waits for the round in flight.
 */
export function startPeriodicSweep(
  name: string,
  intervalMs: number,
  sweep: () => Promise<unknown>,
  log: Logger,
): { stop(): Promise<void> } {
  let running = Promise.resolve();
  const round = () => {
    running = running.then(sweep).then(
      () => undefined,
      (error: unknown) => log.error({ err: errorMessage(error), sweep: name }, "sweep failed"),
    );
  };
  const timer = setInterval(round, intervalMs);
  timer.unref();
  round();
  return {
    async stop() {
      clearInterval(timer);
      await running;
    },
  };
}
