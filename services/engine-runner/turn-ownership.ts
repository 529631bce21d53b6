import type { DispatchInput, DispatchStop, RunningInput } from "./protocols/engine-session.js";

/**
 * Steering is a device talking over its own running task. An input may join the running turn (be folded into it,
 * or queued where the engine would merge it into the next turn) only when everything that turn holds is the same
 * device's; another device's input waits in the runner until the turn has ended and then starts its own.
 */
export function mayJoinRunningTurn(running: readonly RunningInput[], deviceId: string): boolean {
  return running.every((input) => input.deviceId === deviceId);
}

/** What a `turn.stop` does: interrupt the engine, withdraw the device's waiting inputs, or nothing (and why). */
export type StopDecision =
  | { action: "interrupt" }
  | { action: "withdraw"; inputs: DispatchInput[] }
  | { action: "refuse"; reason: StopRefusal };

export type StopRefusal = "TURN_HOLDS_OTHER_DEVICE" | "STOP_TARGET_NOT_NEWEST" | "NOTHING_OWNED_TO_STOP";

/**
 * A stop interrupts the engine only when every input consumed into the running turn (`consumed`: taken into it,
 * not merely queued behind it) is the stopping device's and the stop names the newest of them (or names none). Otherwise it withdraws the device's own inputs still waiting in the
 * runner (only the named one, when it names one) and the running turn continues; with nothing of its own to stop
 * it is refused.
 */
export function decideStop(
  stop: DispatchStop,
  consumed: readonly RunningInput[],
  waiting: readonly DispatchInput[],
): StopDecision {
  const target = stop.targetIdempotencyKey;
  const newest = consumed.at(-1);
  const owned = newest !== undefined && mayJoinRunningTurn(consumed, stop.deviceId);
  if (owned && (target === undefined || newest.idempotencyKey === target)) return { action: "interrupt" };
  const withdrawable = waiting.filter(
    (input) => input.deviceId === stop.deviceId && (target === undefined || input.idempotencyKey === target),
  );
  if (withdrawable.length > 0) return { action: "withdraw", inputs: withdrawable };
  if (owned) return { action: "refuse", reason: "STOP_TARGET_NOT_NEWEST" };
  if (consumed.some((input) => input.deviceId === stop.deviceId))
    return { action: "refuse", reason: "TURN_HOLDS_OTHER_DEVICE" };
  return { action: "refuse", reason: "NOTHING_OWNED_TO_STOP" };
}
