import { readFileSync } from "node:fs";
import { z } from "zod";
import { replyRouteSchema } from "../../libs/contract/lamp-wire.js";

/**
 * A lamp-sim script: what a user does at the Lamp, in order. `"last"` names the most recent run (cancel) or the most
 * recently played result (repeat).
 */
export const scriptStepSchema = z.union([
  z.strictObject({
    say: z.string().min(1),
    agent: z.string().min(1),
    machine: z.string().min(1),
    route: replyRouteSchema.default("voice"),
    target: z.string().min(1).max(128).default("lamp-sim-target"),
    expiresInMs: z.number().int().nonnegative().optional(),
  }),
  z.strictObject({ waitPlaybacks: z.number().int().positive() }),
  z.strictObject({ sleepMs: z.number().int().nonnegative() }),
  z.strictObject({ repeat: z.string().min(1) }),
  z.strictObject({ cancel: z.string().min(1) }),
]);
export type ScriptStep = z.infer<typeof scriptStepSchema>;

export const lampScriptSchema = z.strictObject({ steps: z.array(scriptStepSchema) });

export function loadScript(path: string): ScriptStep[] {
  const parsed = lampScriptSchema.safeParse(JSON.parse(readFileSync(path, "utf8")));
  if (!parsed.success) {
    const issue = parsed.error.issues[0];
    throw new Error(`${path}: ${issue?.path.join(".") || "(root)"}: ${issue?.message ?? "invalid"}`);
  }
  return parsed.data.steps;
}
