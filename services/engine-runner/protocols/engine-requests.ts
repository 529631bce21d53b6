import { asFrame, type Frame } from "../../../libs/contract/engine-frame.js";
import type { ApprovalPolicy } from "../../../libs/contract/engine.js";

/** How the runner answered a request the engine was waiting on (seed 004 RuntimeRequest), for the record and metrics. */
export interface EngineRequestAnswer {
  raw: string;
  kind: "approval" | "user_input" | "unsupported";
  decision: "allow" | "deny" | "unanswerable";
  method: string;
}

const CODEX_APPROVALS = new Set([
  "item/commandExecution/requestApproval",
  "item/fileChange/requestApproval",
  "execCommandApproval",
  "applyPatchApproval",
]);
/** The legacy approval methods answer in the older vocabulary. */
const LEGACY_CODEX_DECISIONS = { allow: "approved", deny: "denied" } as const;
const CODEX_DECISIONS = { allow: "accept", deny: "decline" } as const;

/**
 * A Codex app-server server request (a line with both `id` and `method`) answered at once: approvals by the agent's
 * policy, anything else (a question for the user, an unknown request) with a JSON-RPC error, because no one on a
 * voice surface can answer it and a request left open hangs the turn for ever.
 */
export function answerCodexRequest(frame: Frame, policy: ApprovalPolicy): EngineRequestAnswer | undefined {
  const { id, method } = frame;
  if ((typeof id !== "number" && typeof id !== "string") || typeof method !== "string") return undefined;
  if (CODEX_APPROVALS.has(method)) {
    const vocabulary = method.startsWith("item/") ? CODEX_DECISIONS : LEGACY_CODEX_DECISIONS;
    const raw = JSON.stringify({ id, result: { decision: vocabulary[policy] } });
    return { raw, kind: "approval", decision: policy, method };
  }
  const userInput = method === "item/tool/requestUserInput";
  const message = userInput
    ? "no user can answer questions on this surface"
    : `unsupported request ${method}`;
  const raw = JSON.stringify({ id, error: { code: userInput ? -32000 : -32601, message } });
  return { raw, kind: userInput ? "user_input" : "unsupported", decision: "unanswerable", method };
}

/**
 * A Claude stream-json `control_request` from the CLI (permission prompts arrive so with `--permission-prompt-tool
 * stdio`): `can_use_tool` is answered by the policy, any other subtype with an error response.
 */
export function answerClaudeRequest(frame: Frame, policy: ApprovalPolicy): EngineRequestAnswer | undefined {
  const requestId = frame.request_id;
  if (frame.type !== "control_request" || typeof requestId !== "string") return undefined;
  const request = asFrame(frame.request);
  const subtype = typeof request?.subtype === "string" ? request.subtype : "unknown";
  if (subtype !== "can_use_tool") {
    const raw = JSON.stringify({
      type: "control_response",
      response: { subtype: "error", request_id: requestId, error: `unsupported request ${subtype}` },
    });
    return { raw, kind: "unsupported", decision: "unanswerable", method: subtype };
  }
  const verdict =
    policy === "allow"
      ? { behavior: "allow", updatedInput: asFrame(request?.input) ?? {} }
      : { behavior: "deny", message: "Denied by the agent's approval policy." };
  const raw = JSON.stringify({
    type: "control_response",
    response: { subtype: "success", request_id: requestId, response: verdict },
  });
  return { raw, kind: "approval", decision: policy, method: subtype };
}
