import { z } from "zod";
import { countOption } from "../count-option.js";
import type { ToolCommandLine } from "../../tools/cli-args.js";

const HELP = [
  "usage: npm run bench -- retained [--results N] [--seconds N] [--mode split|all-in-one] [--bare]",
  "",
  "Idle cost of retained data: starts lampline on a private redis-server (AOF everysec), measures Redis CPU",
  "(INFO cpu, all threads and the main thread), the time inside commands (INFO commandstats) and commands over an",
  "idle window, stores N synthetic retained results in the real store layout (listed in the retention indexes, as",
  "the writers list them), waits out the AOF rewrite that starts, measures the same idle window again and prints",
  "both side by side. Not part of .ci/run.",
  "",
  "  --results <n>    synthetic retained results to store (default 1000000)",
  "  --seconds <n>    length of each idle window (default 30)",
  "  --mode <m>       split (every service its own process, default) or all-in-one",
  "  --bare           start no services: what redis-server alone spends on the same data",
  "  -h, --help       this text",
].join("\n");

export const retainedBenchCommandLine = {
  name: "npm run bench -- retained",
  help: HELP,
  options: {
    results: { type: "string" },
    seconds: { type: "string" },
    mode: { type: "string" },
    bare: { type: "boolean" },
  },
  schema: z.strictObject({
    results: countOption(1_000_000),
    seconds: countOption(30),
    mode: z.enum(["split", "all-in-one"]).default("split"),
    bare: z.boolean().default(false),
  }),
} satisfies ToolCommandLine<z.ZodType>;
