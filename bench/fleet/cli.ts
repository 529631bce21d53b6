import { z } from "zod";
import { countOption } from "../count-option.js";
import type { ToolCommandLine } from "../../tools/cli-args.js";

const HELP = [
  "usage: npm run bench -- fleet [--lamps N] [--active-share F] [--baseline-lamps N] [--seconds N] [--rate N]",
  "                              [--partitions K] [--routers R] [--replicas N] [--cluster]",
  "",
  "One lampline stack (every service its own process) on a private redis-server (AOF everysec), or on a",
  "three-master Redis Cluster with --cluster, with engine-sim agents. Connects --baseline-lamps Lamps over the",
  "device-gateway WebSocket and offers --rate results/s from the active Lamps, then connects the rest up to --lamps",
  "and offers the same load from the same active Lamps. Reports Redis connections per process and per purpose,",
  "memory per idle device (service RSS and Redis used_memory deltas), partition lease changes, idle Redis",
  "commands/s, results/s and request→playback p99 for both fleet sizes side by side; then disconnects the idle",
  "Lamps and reports what was let go. Prints a table and writes bench/results/fleet-<time>.json.",
  "",
  "  --lamps <n>            the large fleet (default 10000)",
  "  --active-share <f>     share of --lamps that sends voice requests (default 0.01); the same Lamps are the",
  "                         active ones in both phases (all of the small fleet when it has fewer)",
  "  --baseline-lamps <n>   the small fleet (default 100)",
  "  --seconds <n>          length of each load window, the first fifth unmeasured (default 20)",
  "  --rate <n>             results/s offered in each load window (default 20)",
  "  --partitions <k>       STREAM_PARTITIONS (default 4)",
  "  --routers <r>          router replicas (default 1)",
  "  --replicas <n>         processes of each consumer-group service: evidence-extractor, result-producer,",
  "                         run-resolver, tts-dispatcher (default 1)",
  "  --cluster              a three-master Redis Cluster instead of one redis-server",
  "  -h, --help             this text",
].join("\n");

const argsSchema = z
  .strictObject({
    lamps: countOption(10_000),
    "active-share": z.coerce.number().gt(0).max(1).default(0.01),
    "baseline-lamps": countOption(100),
    seconds: countOption(20),
    rate: countOption(20),
    partitions: countOption(4),
    routers: countOption(1),
    replicas: countOption(1),
    cluster: z.boolean().default(false),
  })
  .refine((args) => args["baseline-lamps"] <= args.lamps, {
    message: "--baseline-lamps must not exceed --lamps",
    path: ["baseline-lamps"],
  });
export type FleetBenchArgs = z.infer<typeof argsSchema>;

export const fleetBenchCommandLine: ToolCommandLine<typeof argsSchema> = {
  name: "bench fleet",
  help: HELP,
  options: {
    lamps: { type: "string" },
    "active-share": { type: "string" },
    "baseline-lamps": { type: "string" },
    seconds: { type: "string" },
    rate: { type: "string" },
    partitions: { type: "string" },
    routers: { type: "string" },
    replicas: { type: "string" },
    cluster: { type: "boolean" },
  },
  schema: argsSchema,
};
