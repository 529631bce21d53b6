import { codexInputText, isCodexNotification, isCodexRequest, mapDeep, record, textOf } from "../frames.js";
import type { LiveFrame } from "../live-io.js";
import type { Expectation, ReplayProtocol } from "./replay-protocol.js";

const INPUT_METHODS = new Set(["turn/start", "turn/steer"]);

/**
 * Codex transcripts record the JSON-RPC lines themselves. A recorded request waits for a live request with the
 * same method (and the same input text for turn/start and turn/steer) and binds recorded id -> live id for the
 * response; a recorded response to a server request waits for a live line with that id. When a live input carried
 * `clientUserMessageId`, the userMessage items of that input carry it as `clientId`, as Codex 0.156 does.
 */
export class CodexReplay implements ReplayProtocol {
  private readonly requestIds = new Map<unknown, unknown>();
  private readonly clientIds = new Map<string, string>();

  expectation(recorded: Record<string, unknown>): Expectation | undefined {
    const method = typeof recorded.method === "string" ? recorded.method : undefined;
    if (method === undefined)
      return {
        matches: (live) => live.method === undefined && live.id === recorded.id,
        matched: () => [],
      };
    if (recorded.id === undefined)
      return { matches: (live) => isCodexNotification(live, method), matched: () => [] };
    const text = INPUT_METHODS.has(method) ? codexInputText(recorded) : undefined;
    return {
      matches: (live) =>
        isCodexRequest(live, method) && (text === undefined || codexInputText(live) === text),
      matched: (live: LiveFrame) => {
        this.requestIds.set(recorded.id, live.id);
        const clientId = record(live.params)?.clientUserMessageId;
        const liveText = codexInputText(live);
        if (typeof clientId === "string" && liveText !== undefined) this.clientIds.set(liveText, clientId);
        return [];
      },
    };
  }

  substitute(recorded: Record<string, unknown>): unknown {
    const rebound =
      recorded.method === undefined && this.requestIds.has(recorded.id)
        ? { ...recorded, id: this.requestIds.get(recorded.id) }
        : recorded;
    return mapDeep(rebound, (value) => {
      const item = record(value);
      if (item?.type !== "userMessage") return undefined;
      const clientId = this.clientIds.get(textOf(item.content) ?? "");
      return clientId === undefined ? undefined : { ...item, clientId };
    });
  }
}
