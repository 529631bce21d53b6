import type { Outcome } from "../../libs/contract/turn-result.js";

/**
 * What each recording must produce, derived from the evidence rules in docs/evidence.md (not tuned per case).
 * Inputs are named by prompt number (`1`, `2`…) and stops by `s<n>`, in the order the recording sends them.
 * `results`: every turn.completed in order — members, outcome, correlation of the members, start of fullText.
 * `unknown`: every evidence.missing in order. `stops`: stop.confirmed in order.
 *
 * Rules applied: Claude CLIs that echo prompt uuids give native_exact members; CLIs that never echo fall back to
 * ordinal (exactly one unattributed input), and two unattributed inputs at a boundary (message_steering) make both
 * unknown. Background wakes / peer turns own no input. An exit with open inputs gives ENGINE_EXITED (stops too).
 * Codex: turn/start responses bind natively (native_scoped), a steer needs its userMessage item, sub-agent threads
 * never make membership, turn/interrupt answered = stop confirmed, interrupted = cancelled.
 */
export interface ExpectedResult {
  members: string[];
  outcome: Outcome;
  correlation: "native_exact" | "native_scoped" | "ordinal" | "fingerprint";
  text: string;
}

export interface ExpectedReplay {
  results: ExpectedResult[];
  unknown?: { members: string[]; reason: string }[];
  stops?: string[];
}

const done = (
  members: string[],
  correlation: ExpectedResult["correlation"],
  text: string,
): ExpectedResult => ({
  members,
  outcome: "completed",
  correlation,
  text,
});
const ordinal = (prompt: string, text: string) => done([prompt], "ordinal", text);
const echoed = (prompt: string, text: string) => done([prompt], "native_exact", text);
const codex = (prompt: string, text: string) => done([prompt], "native_scoped", text);
const exited = (...members: string[]) => ({ members, reason: "ENGINE_EXITED" });

export const CLAUDE_EXPECTATIONS: Record<string, ExpectedReplay> = {
  claude_background_monitor_wake: { results: [echoed("1", "STARTED")] },
  claude_background_subagent_after_root: { results: [ordinal("1", "ROOT_STARTED")] },
  claude_background_subagent_lifecycle: {
    results: [
      ordinal("1", "LAUNCHED"),
      ordinal("2", "B_STOPPED"),
      ordinal("3", "RESUMED"),
      ordinal("4", "ALL_DONE"),
    ],
  },
  claude_background_task_after_root: { results: [ordinal("1", "L2_STARTED")] },
  claude_background_task_interrupt: { results: [], unknown: [exited("1", "s1")] },
  claude_background_task_wake: { results: [ordinal("1", "STARTED"), ordinal("2", "USER_REPLY")] },
  claude_background_wake_before_queued_prompt: {
    results: [
      echoed("1", "LAUNCHED"),
      echoed("2", "B_STOPPED"),
      echoed("3", "RESUMED"),
      echoed("4", "ALL_DONE"),
    ],
  },
  claude_background_wake_before_queued_prompt_no_echo: {
    results: [ordinal("1", "LAUNCHED"), ordinal("2", "B_STOPPED"), ordinal("3", "RESUMED")],
    unknown: [exited("4")],
  },
  claude_compact_after_peer_turn: { results: [echoed("1", "compact probe first turn"), echoed("2", "")] },
  claude_compact_after_peer_turn_no_echo: {
    results: [ordinal("1", "compact probe first turn")],
    unknown: [exited("2")],
  },
  claude_compact_after_resume_wake: { results: [echoed("1", "compact probe first turn"), echoed("2", "")] },
  claude_idle_resume: { results: [ordinal("1", "idle resume first"), ordinal("2", "idle resume second")] },
  claude_local_bash_task: { results: [ordinal("1", "claude local bash task fixture complete")] },
  claude_mcp_tool_presentation: { results: [echoed("1", "mcp presentation fixture complete")] },
  claude_nested_background_subagent_wake: { results: [echoed("1", "ROOT_STARTED")] },
  claude_nested_subagent_model: { results: [echoed("1", "NESTED_LEAF_OK")] },
  claude_result_is_error: {
    results: [
      { members: ["1"], outcome: "failed", correlation: "ordinal", text: "Failed to authenticate" },
      ordinal("2", "claude result is_error fixture recovered"),
    ],
  },
  claude_subagent_resume_after_restart: {
    results: [echoed("1", "Both audit subagents"), echoed("2", "Sent to the")],
  },
  message_steering: { results: [], unknown: [{ members: ["1", "2"], reason: "RESULT_EVIDENCE_MISSING" }] },
  multi_turn: { results: [ordinal("1", "first fixture turn"), ordinal("2", "second fixture turn")] },
  multi_turn_restart: { results: [ordinal("1", "first fixture turn"), ordinal("2", "second fixture turn")] },
  queued_turn: { results: [ordinal("1", "first fixture turn"), ordinal("2", "second fixture turn")] },
  simple: { results: [ordinal("1", "fixture simple ok")] },
  subagent: { results: [ordinal("1", "Both subagents completed")] },
  thread_fork_native: { results: [ordinal("1", "source fork seed ok"), ordinal("2", "fork native ok")] },
  thread_fork_native_continue: {
    results: [
      ordinal("1", "source marker stored"),
      ordinal("2", "fork marker stored"),
      ordinal("3", "source-marker-7Q9V"),
    ],
  },
  thread_fork_native_siblings: {
    results: [
      ordinal("1", "sibling source stored"),
      ordinal("2", "sibling-source-8R3D"),
      ordinal("3", "sibling-source-8R3D"),
    ],
  },
  thread_merge_back_continue: {
    results: [
      ordinal("1", "merge source stored"),
      ordinal("2", "merge fork stored"),
      ordinal("3", "merge delta stored"),
      ordinal("4", "merge-source-4H8Q"),
    ],
  },
  thread_merge_back_siblings: {
    results: [
      ordinal("1", "merge sibling source stored"),
      ordinal("2", "first merge sibling stored"),
      ordinal("3", "second merge sibling stored"),
      ordinal("4", "first merge delta stored"),
      ordinal("5", "second merge delta stored"),
      ordinal("6", "merge-sibling-source-3C7K"),
    ],
  },
  thread_rollback: {
    results: [
      ordinal("1", "rollback fixture first"),
      ordinal("2", "rollback fixture second"),
      ordinal("3", "Here is the conversation"),
    ],
  },
  tool_call_denied_write: { results: [ordinal("1", "write permission denied")] },
  tool_call_read_only: { results: [ordinal("1", "read only tool fixture complete")] },
  tool_call_read_only_on_request: { results: [ordinal("1", "Done.")] },
  tool_call_restricted_granular: { results: [ordinal("1", "Done.")] },
  tool_call_workspace_never: { results: [ordinal("1", "Done.")] },
  turn_interrupt: { results: [], unknown: [exited("1", "s1")] },
  turn_interrupt_mid_tool: { results: [], unknown: [exited("1", "s1")] },
  turn_interrupt_restart: {
    results: [ordinal("2", "interrupt recovery fixture complete")],
    unknown: [exited("1", "s1")],
  },
  web_search: { results: [ordinal("1", "web search fixture complete")] },
};

export const CODEX_EXPECTATIONS: Record<string, ExpectedReplay> = {
  delegated_task_status: {
    results: [
      codex("2", "Delegated API boundary inspected."),
      { members: ["3"], outcome: "cancelled", correlation: "native_scoped", text: "" },
      codex("4", "Queued delegated follow-up completed."),
    ],
    unknown: [exited("1")],
    stops: ["s1"],
  },
  message_steering: { results: [done(["1", "2"], "native_scoped", "steering fixture observed")] },
  multi_turn: {
    results: [codex("1", "first fixture turn complete"), codex("2", "second fixture turn complete")],
  },
  plan_questions: { results: [codex("1", "plan questions fixture complete")] },
  proposed_plan: { results: [codex("1", "")] },
  provider_thread_resume: {
    results: [codex("1", "provider thread resume"), codex("2", "provider thread resume")],
  },
  queued_turn: {
    results: [codex("1", "first fixture turn complete"), codex("2", "second fixture turn complete")],
  },
  simple: { results: [codex("1", "fixture simple ok")] },
  subagent: { results: [codex("1", "Spawned and completed both subagents")] },
  subagent_continue: {
    results: [codex("1", "initial subagent response"), codex("2", "continued subagent response")],
  },
  subagent_v2: { results: [codex("1", "Hello.")] },
  subagent_v2_approval: { results: [codex("1", "Written.")] },
  subagent_v2_nested: { results: [codex("1", "Hello.")] },
  subagent_v2_nested_approval: { results: [codex("1", "Written.")] },
  thread_fork_native: { results: [codex("1", "source fork seed ok"), codex("2", "fork native ok")] },
  thread_fork_native_continue: {
    results: [
      codex("1", "source marker stored"),
      codex("2", "fork marker stored"),
      codex("3", "source-marker-7Q9V"),
    ],
  },
  thread_fork_native_siblings: {
    results: [
      codex("1", "sibling source stored"),
      codex("2", "sibling-source-8R3D"),
      codex("3", "sibling-source-8R3D"),
    ],
  },
  thread_merge_back_continue: {
    results: [
      codex("1", "merge source stored"),
      codex("2", "merge fork stored"),
      codex("3", "merge delta stored"),
      codex("4", "merge-source-4H8Q"),
    ],
  },
  thread_merge_back_siblings: {
    results: [
      codex("1", "merge sibling source stored"),
      codex("2", "first merge sibling stored"),
      codex("3", "second merge sibling stored"),
      codex("4", "first merge delta stored"),
      codex("5", "second merge delta stored"),
      codex("6", "merge-sibling-source-3C7K"),
    ],
  },
  thread_rollback: {
    results: [
      codex("1", "rollback fixture first"),
      codex("2", "rollback fixture second"),
      codex("3", "User: Respond"),
    ],
  },
  thread_rollback_after_restart: {
    results: [
      codex("1", "rollback fixture first"),
      codex("2", "rollback fixture second"),
      codex("3", "User: Respond"),
    ],
  },
  thread_rollback_to_stopped_turn: {
    results: [
      codex("1", "rollback fixture first"),
      { members: ["2"], outcome: "cancelled", correlation: "native_scoped", text: "I’ll run the command" },
      codex("3", "rollback fixture second"),
      codex("4", "**User:** Respond"),
    ],
    stops: ["s1"],
  },
  todo_list: { results: [codex("1", "todo list fixture complete")] },
  tool_call_read_only_on_request: { results: [codex("1", "Created or overwrote")] },
  tool_call_restricted_granular: { results: [codex("1", "Created `.codex-probe-write-action.txt`")] },
  tool_call_workspace_never: { results: [codex("1", "Created `.codex-probe-write-action.txt`")] },
  turn_interrupt: {
    results: [{ members: ["1"], outcome: "cancelled", correlation: "native_scoped", text: "" }],
    stops: ["s1"],
  },
  turn_interrupt_mid_tool: {
    results: [{ members: ["1"], outcome: "cancelled", correlation: "native_scoped", text: "" }],
    stops: ["s1"],
  },
  web_search: { results: [codex("1", "web search fixture complete")] },
};

/** The openharness captures: the recorded structure must give [A, B] with the recorded final text. */
export const CAPTURE_EXPECTATIONS = {
  "claude-native-queue.json": {
    engine: "claude-transcript",
    results: [done(["1", "2"], "fingerprint", "Finished: two red planes and two blue planes.")],
  },
  "codex-steering.json": {
    engine: "codex-rollout",
    results: [done(["1", "2"], "fingerprint", "GARDEN_RED")],
  },
} as const;
