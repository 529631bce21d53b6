import { readFileSync } from "node:fs";
import { z } from "zod";

/** One line of a corpus transcript (t3code orchestration-v2 testkit format). */
export const transcriptRecordSchema = z.discriminatedUnion("type", [
  z.looseObject({ type: z.literal("transcript_start"), protocol: z.string() }),
  z.looseObject({
    type: z.literal("expect_outbound"),
    label: z.string().optional(),
    frame: z.record(z.string(), z.unknown()),
  }),
  z.looseObject({
    type: z.literal("emit_inbound"),
    label: z.string().optional(),
    frame: z.record(z.string(), z.unknown()),
  }),
  z.looseObject({ type: z.literal("runtime_exit"), status: z.string().optional() }),
]);
export type TranscriptRecord = z.infer<typeof transcriptRecordSchema>;
export type ReplayStep = Exclude<TranscriptRecord, { type: "transcript_start" }>;

/** The transcript split into runtimes: each `runtime_exit` closes one (a trailing unclosed part is one too). */
export function loadTranscriptRuntimes(path: string): ReplayStep[][] {
  const runtimes: ReplayStep[][] = [[]];
  readFileSync(path, "utf8")
    .split("\n")
    .filter((line) => line.trim() !== "")
    .forEach((line, index) => {
      const parsed = transcriptRecordSchema.safeParse(JSON.parse(line));
      if (!parsed.success) throw new Error(`${path}:${index + 1}: not a transcript record`);
      const step = parsed.data;
      if (step.type === "transcript_start") return;
      runtimes.at(-1)?.push(step);
      if (step.type === "runtime_exit") runtimes.push([]);
    });
  return runtimes.filter((steps) => steps.length > 0);
}
