import { exitWithHelp, exitWithUsageError } from "../tools/cli-args.js";

/**
 * `npm run bench -- <name> [args…]`: runs one benchmark by name. Each bench is a module exporting
 * `run(args): Promise<void>` that reads its own arguments (with the tools' shared parser) and prints its own
 * figures; add new ones to BENCHES.
 */
const BENCHES: Record<
  string,
  { summary: string; load: () => Promise<{ run(args: string[]): Promise<void> }> }
> = {
  extractor: {
    summary: "records/s through the evidence adapters and the Redis-backed evidence-extractor",
    load: () => import("./extractor.js"),
  },
  e2e: {
    summary:
      "results/s, latency, CPU, Redis work per result end to end (split, all-in-one) beside a bare baseline",
    load: () => import("./e2e/main.js"),
  },
  fleet: {
    summary:
      "10,000 Lamps on one stack beside 100: Redis connections per process, memory per idle device, leases, p99",
    load: () => import("./fleet/main.js"),
  },
  steady: {
    summary: "memory under a constant load once retention is reached: flat or not, and per retained result",
    load: () => import("./steady/main.js"),
  },
  retained: {
    summary: "idle Redis CPU with the services idle, before and after storing 1,000,000 retained results",
    load: () => import("./retained/main.js"),
  },
};

const HELP = [
  "usage: npm run bench -- <name> [args]   (npm run bench -- <name> --help for a bench's own arguments)",
  "",
  ...Object.entries(BENCHES).map(([name, bench]) => `  ${name.padEnd(12)} ${bench.summary}`),
].join("\n");

const [name, ...args] = process.argv.slice(2);
if (name === undefined || name === "--help" || name === "-h") exitWithHelp(HELP);
const bench = BENCHES[name];
if (!bench)
  exitWithUsageError("bench", `unknown bench '${name}' (one of: ${Object.keys(BENCHES).join(", ")})`);
await (await bench.load()).run(args);
