import { z } from "zod";
import { countOption } from "../count-option.js";
import type { ToolCommandLine } from "../../tools/cli-args.js";

const HELP = [
  "usage: npm run bench -- steady [--mode split|all-in-one] [--rate N] [--retention-seconds N] [--seconds N]",
  "                               [--lamps N]",
  "",
  "Offers a constant load to lampline on a private redis-server (AOF everysec) with every retention scaled down",
  "together (the OS keeps results --retention-seconds, the Harness a thirtieth of that, identity bindings and",
  "delivery markers seven thirtieths: the ratios of the defaults), samples Redis memory every 5 s, and reports",
  "whether memory is flat once retention is reached and what one retained result costs. Writes",
  "bench/results/steady-<time>.json.",
  "",
  "  --mode <m>                 split or all-in-one (default all-in-one)",
  "  --rate <n>                 results offered per second (default 40)",
  "  --retention-seconds <n>    how long the OS keeps a result (default 240, at least 60)",
  "  --seconds <n>              length of the load (default 480: twice the retention)",
  "  --lamps <n>                Lamps connected over WebSocket (default 30)",
  "  -h, --help                 this text",
].join("\n");

const argsSchema = z.strictObject({
  mode: z.enum(["split", "all-in-one"]).default("all-in-one"),
  rate: countOption(40),
  "retention-seconds": countOption(240, 60),
  seconds: countOption(480),
  lamps: countOption(30),
});
export type SteadyBenchArgs = z.infer<typeof argsSchema>;

export const steadyBenchCommandLine: ToolCommandLine<typeof argsSchema> = {
  name: "bench steady",
  help: HELP,
  options: {
    mode: { type: "string" },
    rate: { type: "string" },
    "retention-seconds": { type: "string" },
    seconds: { type: "string" },
    lamps: { type: "string" },
  },
  schema: argsSchema,
};
