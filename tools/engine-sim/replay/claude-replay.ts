import { isDeepStrictEqual } from "node:util";
import { isClaudeInput, isClaudeInterrupt, mapDeep, record } from "../frames.js";
import type { LiveFrame } from "../live-io.js";
import type { Expectation, ReplayProtocol } from "./replay-protocol.js";

/**
 * Claude transcripts record SDK-level actions: `prompt.offer` carries the stream-json user line, `query.interrupt`
 * is the CLI's control_request interrupt (answered with a control_response, which the SDK consumes and the
 * recording therefore lacks), `query.open` is the process start; other SDK actions have no stdin counterpart.
 * A recorded prompt uuid is bound to the live uuid and replaced wherever it appears in what the engine prints.
 */
export class ClaudeReplay implements ReplayProtocol {
  private readonly uuids = new Map<string, string>();

  expectation(recorded: Record<string, unknown>): Expectation | undefined {
    if (recorded.type === "prompt.offer") {
      const message = record(recorded.message);
      const content = record(message?.message)?.content;
      return {
        matches: (live) => isClaudeInput(live) && isDeepStrictEqual(record(live.message)?.content, content),
        matched: (live) => {
          if (typeof message?.uuid === "string" && typeof live.uuid === "string")
            this.uuids.set(message.uuid, live.uuid);
          return [];
        },
      };
    }
    if (recorded.type === "query.interrupt")
      return { matches: isClaudeInterrupt, matched: (live: LiveFrame) => [controlResponse(live)] };
    return undefined;
  }

  substitute(recorded: Record<string, unknown>): unknown {
    return mapDeep(recorded, (value) => (typeof value === "string" ? this.uuids.get(value) : undefined));
  }
}

export function controlResponse(live: LiveFrame): unknown {
  return { type: "control_response", response: { subtype: "success", request_id: live.request_id } };
}
