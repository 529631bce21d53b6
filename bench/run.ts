export {};
/**
 * `npm run bench -- <name> [args…]`: runs one benchmark by name. Each bench is a module exporting
 * `run(args): Promise<void>` that prints its own figures; add new ones to BENCHES.
 */
const BENCHES: Record<string, () => Promise<{ run(args: string[]): Promise<void> }>> = {
  extractor: () => import("./extractor.js"),
};

const [name, ...args] = process.argv.slice(2);
const load = name ? BENCHES[name] : undefined;
if (!load) {
  process.stderr.write(`usage: npm run bench -- <${Object.keys(BENCHES).join("|")}> [args]\n`);
  process.exit(64);
}
await (await load()).run(args);
