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
