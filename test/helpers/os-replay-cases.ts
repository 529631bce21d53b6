import { readFileSync } from "node:fs";
import { z } from "zod";
import { corpusPath } from "./corpus.js";

/** The peer's `os-replay-cases.json`: pending inputs, then events with what the OS must do after each. */
const osReplayCasesSchema = z.object({
  pending: z.array(z.object({ deliveryId: z.string(), idempotencyKey: z.string() })),
  originatingServerInstanceId: z.string(),
  steps: z.array(
    z.object({
      event: z.record(z.string(), z.unknown()),
      expected: z.object({
        resolve: z.array(z.string()).optional(),
        pending: z.array(z.string()).optional(),
        ttsEnqueueCount: z.number().optional(),
        resendInput: z.boolean().optional(),
      }),
    }),
  ),
});

/** The OS replay cases of one contract revision (`turn-correlation-v2` or `summary-correlation`). */
export function osReplayCases(profile: string) {
  const path = corpusPath("openharness", profile, "os-replay-cases.json");
  return osReplayCasesSchema.parse(JSON.parse(readFileSync(path, "utf8")));
}
