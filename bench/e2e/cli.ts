import { z } from "zod";
import { countOption } from "../count-option.js";
import type { ToolCommandLine } from "../../tools/cli-args.js";

const HELP = [
  "usage: npm run bench -- e2e [--mode split|all-in-one|both] [--loads 20,100,300,max] [--seconds N] [--lamps N]",
  "                            [--agents N] [--steered-agents N] [--prefill-results N]",
  "                            [--no-docs]",
  "",
  "Drives lampline (every service its own process, and/or all in one process) on a private redis-server",
  "(AOF everysec) with Lamps over the device-gateway WebSocket and engine-sim agents, beside a bare Redis Streams",
  "baseline in the same run; prints a side-by-side table, writes bench/results/e2e-<time>.json and the",
  '"End to end (issue 16)" section of docs/performance.md with docs/bench/latency-vs-load.svg.',
  "",
  "  --mode <m>               split, all-in-one or both (default both)",
  "  --loads <list>           offered results/s, comma separated; `max` ramps until throughput stops rising",
  "                           (default 20,100,300,max)",
  "  --seconds <n>            length of each load, the first fifth unmeasured (default 10)",
  "  --lamps <n>              Lamps (devices) connected over WebSocket (default 30)",
  "  --agents <n>             engine-sim agents answering one input per turn (default 8)",
  "  --steered-agents <n>     engine-sim agents answering 2 or 3 steered inputs with one turn (default 4)",
  "  --prefill-results <n>    run each mode again after storing n synthetic retained results, to report what",
  "                           they cost in throughput (default 0: not run)",
  "  --no-docs                do not touch docs/performance.md and the chart (the smoke test uses it)",
  "  -h, --help               this text",
].join("\n");

const loadsSchema = z
  .string()
  .transform((text, context) => {
    const parts = text.split(",").map((part) => part.trim());
    const fixed: number[] = [];
    let max = false;
    for (const part of parts) {
      if (part === "max") max = true;
      else if (/^\d+$/.test(part) && Number(part) > 0) fixed.push(Number(part));
      else {
        context.addIssue({ code: "custom", message: `'${part}' is neither a positive rate nor max` });
        return z.NEVER;
      }
    }
    return { fixed, max };
  })
  .default({ fixed: [20, 100, 300], max: true });

const argsSchema = z.strictObject({
  mode: z.enum(["split", "all-in-one", "both"]).default("both"),
  loads: loadsSchema,
  seconds: countOption(10),
  lamps: countOption(30),
  agents: countOption(8),
  "steered-agents": countOption(4, 0),
  "prefill-results": countOption(0, 0),
  "no-docs": z.boolean().default(false),
});
export type E2eBenchArgs = z.infer<typeof argsSchema>;

export const e2eBenchCommandLine: ToolCommandLine<typeof argsSchema> = {
  name: "bench e2e",
  help: HELP,
  options: {
    mode: { type: "string" },
    loads: { type: "string" },
    seconds: { type: "string" },
    lamps: { type: "string" },
    agents: { type: "string" },
    "steered-agents": { type: "string" },
    "prefill-results": { type: "string" },
    "no-docs": { type: "boolean" },
  },
  schema: argsSchema,
};
