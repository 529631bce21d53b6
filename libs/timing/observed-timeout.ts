import { performance } from "node:perf_hooks";
import { STALL_MS } from "./stall.js";

/**
 * setTimeout over time this process observed: a timer that fires a stall late (STALL_MS: the process was stopped
 * or its event loop blocked) waits `ms` again, so a reply that arrived during the pause and waits unread is taken
 * before the timeout is. Returns the cancel.
 */
export function setObservedTimeout(onTimeout: () => void, ms: number): () => void {
  let timer: NodeJS.Timeout;
  const arm = () => {
    const due = performance.now() + ms;
    timer = setTimeout(() => (performance.now() - due >= STALL_MS ? arm() : onTimeout()), ms);
  };
  arm();
  return () => clearTimeout(timer);
}
