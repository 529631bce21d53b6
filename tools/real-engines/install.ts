import { spawnSync } from "node:child_process";
import { z } from "zod";
import { readCommandLine } from "../cli-args.js";
import { installEngine } from "./engine-install.js";
import { ENGINE_PINS, type RealEngine } from "./pins.js";
import { errorMessage } from "../../libs/errors/error-message.js";

const HELP = [
  "usage: npm run engines:install [-- --version-of claude=<v> --version-of codex=<v>]",
  "",
  "Installs the pinned Claude Code and Codex CLIs into the engines cache (LAMPLINE_ENGINES_DIR, default",
  "~/.cache/lampline-engines), not into the project. Already installed versions are kept. Prints each binary.",
  "",
  "  --version-of <engine>=<version>   install another version (e.g. codex=0.172.0) beside the pin",
  "  -h, --help                        this text",
].join("\n");

const args = readCommandLine({
  name: "engines:install",
  help: HELP,
  options: { "version-of": { type: "string", multiple: true } },
  schema: z.strictObject({
    "version-of": z
      .array(z.string().regex(/^(claude|codex)=[\w.-]+$/, "expected claude=<v> or codex=<v>"))
      .default([]),
  }),
});
const overrides = new Map(args["version-of"].map((pair) => pair.split("=") as [RealEngine, string]));

for (const engine of Object.keys(ENGINE_PINS) as RealEngine[]) {
  const version = overrides.get(engine) ?? ENGINE_PINS[engine].version;
  let binary: string;
  try {
    binary = installEngine(engine, version);
  } catch (error) {
    process.stderr.write(`engines:install: ${errorMessage(error)}\n`);
    process.exit(1);
  }
  const reported = spawnSync(binary, ["--version"], { encoding: "utf8", timeout: 60_000 });
  process.stdout.write(`${engine} ${version}: ${binary} (${reported.stdout.trim() || "no --version"})\n`);
}
