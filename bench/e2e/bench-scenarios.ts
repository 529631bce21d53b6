import { writeFileSync } from "node:fs";
import { join } from "node:path";

/**
 * The bench's engine-sim scenarios (Claude stream-json, the frames of test/fixtures/engine-scenarios'
 * claude-answer-each-input and chaos-claude-steer-folded), built for a group of 1–3 inputs answered by one turn and
 * played over and over with no sleeps. The answer names the group and the time the engine printed its result
 * (`… at <ms>`), so the Lamp's `playback.start` text tells the bench when the result was completed.
 */
const LETTERS = ["A", "B", "C"] as const;

const session = "{{session:session}}";
const usage = {
  input_tokens: 3,
  cache_creation_input_tokens: 0,
  cache_read_input_tokens: 11792,
  output_tokens: 8,
  service_tier: "standard",
};

function lifecycle(letter: string, state: string) {
  return {
    emit: {
      type: "command_lifecycle",
      command_uuid: `{{${letter}.uuid}}`,
      state,
      uuid: "{{uuid}}",
      session_id: session,
    },
  };
}

function echo(letter: string) {
  return {
    emit: {
      type: "user",
      message: { role: "user", content: `{{${letter}.text}}` },
      session_id: session,
      parent_tool_use_id: null,
      uuid: `{{${letter}.uuid}}`,
      timestamp: "{{now:iso}}",
      isReplay: true,
    },
  };
}

function assistant(messageId: string, content: unknown[], letters: readonly string[]) {
  return {
    emit: {
      type: "assistant",
      message: {
        model: "claude-sonnet-4-6",
        id: `msg_{{id:${messageId}}}`,
        type: "message",
        role: "assistant",
        content,
        stop_reason: null,
        stop_sequence: null,
        usage,
      },
      parent_tool_use_id: null,
      session_id: session,
      uuid: "{{uuid}}",
      user_message_uuid: "{{A.uuid}}",
      user_message_uuids: letters.map((letter) => `{{${letter}.uuid}}`),
    },
  };
}

const init = {
  emit: {
    type: "system",
    subtype: "init",
    cwd: "/workspace",
    session_id: session,
    tools: ["Agent", "Bash", "Read"],
    mcp_servers: [],
    model: "claude-sonnet-4-6",
    permissionMode: "bypassPermissions",
    slash_commands: ["compact"],
    apiKeySource: "none",
    claude_code_version: "2.1.285",
    output_style: "default",
    agents: ["general-purpose"],
    skills: [],
    plugins: [],
    fast_mode_state: "off",
    uuid: "{{uuid}}",
  },
};
const requesting = {
  emit: { type: "system", subtype: "status", status: "requesting", session_id: session, uuid: "{{uuid}}" },
};

/** The spoken answer: the first input's text (the group's name) and the completion time. */
const ANSWER = "ANSWER {{A.text}} at {{now:ms}}";

/** One turn answering `inputs` (1–3) inputs: the later ones steer into the running turn at a tool boundary. */
function turnSteps(inputs: number): unknown[] {
  const letters = LETTERS.slice(0, inputs);
  const steps: unknown[] = [
    { expect: "input", as: "A" },
    lifecycle("A", "queued"),
    lifecycle("A", "started"),
    echo("A"),
    init,
    requesting,
  ];
  if (inputs > 1) {
    steps.push(
      assistant(
        "m1",
        [
          {
            type: "tool_use",
            id: "toolu_{{id:bash}}",
            name: "Bash",
            input: { command: "sleep 2 && echo done", description: "Wait" },
            caller: { type: "direct" },
          },
        ],
        ["A"],
      ),
    );
    letters.slice(1).forEach((letter, index) => {
      steps.push({ expect: "input", as: letter }, lifecycle(letter, "queued"));
      if (index === 0)
        steps.push({
          emit: {
            type: "user",
            message: {
              role: "user",
              content: [
                { tool_use_id: "toolu_{{id:bash}}", type: "tool_result", content: "done", is_error: false },
              ],
            },
            parent_tool_use_id: null,
            session_id: session,
            uuid: "{{uuid}}",
            timestamp: "{{now:iso}}",
          },
        });
      steps.push(lifecycle(letter, "started"), echo(letter));
    });
    steps.push(requesting);
  }
  steps.push(assistant("m2", [{ type: "text", text: ANSWER }], letters), {
    emit: {
      type: "result",
      subtype: "success",
      is_error: false,
      api_error_status: null,
      duration_ms: 1873,
      duration_api_ms: 1602,
      num_turns: 1,
      result: ANSWER,
      stop_reason: "end_turn",
      session_id: session,
      total_cost_usd: 0.0123,
      usage,
      modelUsage: {},
      permission_denials: [],
      terminal_reason: "completed",
      fast_mode_state: "off",
      uuid: "{{uuid}}",
      user_message_uuid: "{{A.uuid}}",
      user_message_uuids: letters.map((letter) => `{{${letter}.uuid}}`),
      queued_turn_count: 0,
      result_index: 0,
    },
  });
  for (const letter of letters) steps.push(lifecycle(letter, "completed"));
  return steps;
}

/** Writes the scenario for groups of `inputs` inputs into `dir`; returns its path. */
export function writeGroupScenario(dir: string, inputs: 1 | 2 | 3): string {
  const path = join(dir, `bench-claude-group-of-${inputs}.json`);
  const scenario = {
    protocol: "claude-stream-json",
    description: `Bench: every ${inputs} input(s) answered by one turn, no sleeps, the answer carries its completion time. Repeats until stdin ends.`,
    runtimes: [{ steps: [], repeat: turnSteps(inputs) }],
  };
  writeFileSync(path, JSON.stringify(scenario));
  return path;
}

/** `ANSWER <group> at <ms>`: which group a spoken answer belongs to and when the engine completed it. */
export function parseAnswer(text: string): { group: string; completedAt: number } | undefined {
  const match = /ANSWER (\S+) at (\d{13})/.exec(text);
  return match ? { group: match[1] as string, completedAt: Number(match[2]) } : undefined;
}
