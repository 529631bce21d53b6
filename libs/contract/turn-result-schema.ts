import { z } from "zod";
import { turnResultEventSchema } from "./turn-result.js";

/** The published JSON schema of the `turn.result` event, generated from the zod schema (never hand-written). */
export function turnResultJsonSchema(): Record<string, unknown> {
  return z.toJSONSchema(turnResultEventSchema, { target: "draft-2020-12" }) as Record<string, unknown>;
}
