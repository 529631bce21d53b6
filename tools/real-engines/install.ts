import { spawnSync } from "node:child_process";
import { existsSync, mkdirSync, writeFileSync } from "node:fs";
import { z } from "zod";
import { readCommandLine } from "../cli-args.js";
import { ENGINE_PINS, engineBinary, engineFolder, type RealEngine } from "./pins.js";

const HELP = [
  "usage: npm run engines:install [-- --version-of claude=<v> --version-of codex=<v>]",
  "",
  "Installs the pinned Claude Code and Codex CLIs into the engines cache (LAMPLINE_ENGINES_DIR, default",
  "~/.cache/lampline-engines), not into the project. Already installed versions are kept. Prints each binary.",
  "",
  "  --version-of <engine>=<version>   install another version (e.g. codex=latest) instead of the pin",
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
  const pin = ENGINE_PINS[engine];
  const version = overrides.get(engine) ?? pin.version;
  const binary = engineBinary(engine, version);
  if (!existsSync(binary)) {
    const folder = engineFolder(engine, version);
    mkdirSync(folder, { recursive: true });
    writeFileSync(`${folder}/package.json`, JSON.stringify({ private: true }));
    // The CLIs ship native binaries; npm only warns that Claude Code declares node >= 22.
    const npm = spawnSync(
      "npm",
      ["install", "--no-audit", "--no-fund", "--save-exact", "--prefix", folder, `${pin.package}@${version}`],
      { stdio: ["ignore", "inherit", "inherit"] },
    );
    if (npm.status !== 0 || !existsSync(binary)) {
      process.stderr.write(`engines:install: ${pin.package}@${version} did not install\n`);
      process.exit(1);
    }
  }
  const reported = spawnSync(binary, ["--version"], { encoding: "utf8", timeout: 60_000 });
  process.stdout.write(`${engine} ${version}: ${binary} (${reported.stdout.trim() || "no --version"})\n`);
}
