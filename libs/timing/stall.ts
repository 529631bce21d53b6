/**
 * A timer this much later than scheduled means the process itself was not running (stopped, throttled, a long GC or
 * a blocked event loop): what arrived meanwhile still waits unread, so the time is not the peer's.
 */
export const STALL_MS = 1_000;
