import { readFileSync } from "node:fs";
import { z } from "zod";

/**
 * What the scripted model answers. Each model request takes the first unused reply whose `when` matches the
 * conversation's latest user text (a substring; no `when` matches anything); with none left it answers
 * `ANSWER: <latest user text>`. Texts are templates: `{{last}}` the latest user text, `{{users}}` every user text of
 * the request joined with " | " (so a test sees that a steered input reached the model within the same turn).
 */
const replySchema = z.discriminatedUnion("kind", [
  z.strictObject({
    kind: z.literal("text"),
    text: z.string().min(1),
    /** Wait before the first byte (a model that thinks). */
    delayMs: z.number().int().nonnegative().default(0),
    /** Stream the text in this many pieces, `chunkDelayMs` apart (a slow stream an interrupt can land in). */
    chunks: z.number().int().positive().default(1),
    chunkDelayMs: z.number().int().nonnegative().default(0),
  }),
  z.strictObject({
    kind: z.literal("tool"),
    /** Anthropic tool name (e.g. Bash) or the Codex function name the request offers (e.g. shell). */
    name: z.string().min(1),
    input: z.record(z.string(), z.unknown()),
    delayMs: z.number().int().nonnegative().default(0),
    /**
     * Hold the reply until the CLI has been given an input containing this text, so the tool only runs once a
     * steer has reached the engine: the steer lands mid-turn whatever the path to the engine costs.
     */
    awaitInput: z.string().min(1).optional(),
  }),
  z.strictObject({
    kind: z.literal("error"),
    status: z.number().int().min(400).max(599),
    message: z.string().min(1),
    delayMs: z.number().int().nonnegative().default(0),
  }),
]);
export type ModelReply = z.infer<typeof replySchema>;

const scriptedReplySchema = z.strictObject({
  when: z.string().min(1).optional(),
  /** The reply answers only requests that carry a tool result (the turn's follow-up after a tool ran). */
  afterTool: z.boolean().default(false),
  /** The reply is never used up: every matching request gets it (a model that keeps failing, whatever the retries). */
  always: z.boolean().default(false),
  reply: replySchema,
});
export type ScriptedReply = z.infer<typeof scriptedReplySchema>;

export const modelScenarioSchema = z.strictObject({
  description: z.string().min(1),
  replies: z.array(scriptedReplySchema),
  /**
   * Input text → file name: once the CLI is given an input containing the text, the sandbox creates that (empty)
   * file in the CLI's working directory, so a tool command can run until a steer has reached the engine. (Codex
   * samples again when a steer comes while the model answers, so its steer must land while the tool runs.)
   */
  inputFiles: z.record(z.string().min(1), z.string().regex(/^[\w.-]+$/)).default({}),
});
export type ModelScenario = z.infer<typeof modelScenarioSchema>;

export function loadModelScenario(path: string): ModelScenario {
  return modelScenarioSchema.parse(JSON.parse(readFileSync(path, "utf8")));
}
