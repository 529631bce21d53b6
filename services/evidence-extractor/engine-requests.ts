import { derivedAppId } from "./identity-binding.js";
import type { RuntimeState } from "./runtime-state.js";
import type { StepOutput } from "./step-output.js";

/** A request the engine made and waits on (seed 004 RuntimeRequest): its native id in this connection and its method. */
export interface NativeRequest {
  nativeId: string;
  method: string;
}

/** An engine waits on one request at a time in practice; more than this many unanswered means something is wrong. */
const MAX_PENDING_REQUESTS = 64;

/**
 * The engine asked (Codex server request, Claude `control_request`): it gets an app-owned RuntimeRequestId bound to
 * its native id in this runtime's connection, and stays pending until the runner's answer is recorded. Pending
 * requests are bounded; beyond the bound the oldest is dropped (only its not_resumable reason is lost).
 */
export function requestOpened(state: RuntimeState, request: NativeRequest, step: StepOutput): void {
  step.bind(state, {
    appEntityKind: "request",
    appEntityId: derivedAppId("request", [state.runtimeId, request.nativeId]),
    nativeKind: request.method,
    nativeRef: request.nativeId,
    correlation: "native_exact",
  });
  if (!state.pendingRequests.includes(request.nativeId)) state.pendingRequests.push(request.nativeId);
  if (state.pendingRequests.length > MAX_PENDING_REQUESTS) {
    state.pendingRequests.shift();
    step.ignore("request_evicted");
  }
}

/** The runner's answer was recorded: the engine is no longer waiting on this request. */
export function requestAnswered(state: RuntimeState, nativeId: string | undefined): void {
  if (nativeId !== undefined) state.pendingRequests = state.pendingRequests.filter((id) => id !== nativeId);
}

/**
 * Why the open inputs of a closed runtime end: a request the engine was waiting on cannot be answered by the next
 * runtime (not_resumable, the turn fails closed), else the engine simply exited.
 */
export function exitReason(state: RuntimeState): "REQUEST_NOT_RESUMABLE" | "ENGINE_EXITED" {
  return state.pendingRequests.length > 0 ? "REQUEST_NOT_RESUMABLE" : "ENGINE_EXITED";
}
