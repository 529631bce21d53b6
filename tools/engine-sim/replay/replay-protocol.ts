import type { LiveFrame } from "../live-io.js";

/** What a recorded outbound frame waits for on stdin, and what to do once it arrived. */
export interface Expectation {
  matches(live: LiveFrame): boolean;
  /** Binds recorded ids to live ones; returns frames to print at once (answers the recording did not capture). */
  matched(live: LiveFrame): unknown[];
}

/** Protocol-specific part of a replay: how recorded outbound frames match live ones, how ids are rebound. */
export interface ReplayProtocol {
  /** undefined: the frame has no stdin counterpart (process start, SDK-only actions), so nothing to wait for. */
  expectation(recorded: Record<string, unknown>): Expectation | undefined;
  /** The recorded inbound frame with recorded ids replaced by the live ids bound so far. */
  substitute(recorded: Record<string, unknown>): unknown;
}
