import { spawnSync } from "node:child_process";
import { existsSync, mkdirSync, writeFileSync } from "node:fs";
import { ENGINE_PINS, engineBinary, engineFolder, type RealEngine } from "./pins.js";

/** Installs one CLI version into the engines cache unless it is there; returns its binary or throws. */
export function installEngine(engine: RealEngine, version: string): string {
  const binary = engineBinary(engine, version);
  if (existsSync(binary)) return binary;
  const folder = engineFolder(engine, version);
  mkdirSync(folder, { recursive: true });
  writeFileSync(`${folder}/package.json`, JSON.stringify({ private: true }));
  // The CLIs ship native binaries; npm only warns that Claude Code declares node >= 22.
  const npm = spawnSync(
    "npm",
    [
      "install",
      "--no-audit",
      "--no-fund",
      "--save-exact",
      "--prefix",
      folder,
      `${ENGINE_PINS[engine].package}@${version}`,
    ],
    { stdio: ["ignore", "inherit", "inherit"] },
  );
  if (npm.status !== 0 || !existsSync(binary))
    throw new Error(`${ENGINE_PINS[engine].package}@${version} did not install`);
  return binary;
}

/** The newest version the registry offers. */
export function latestVersion(engine: RealEngine): string {
  const view = spawnSync("npm", ["view", ENGINE_PINS[engine].package, "version"], { encoding: "utf8" });
  const version = view.stdout.trim();
  if (view.status !== 0 || !/^[\w.-]+$/.test(version))
    throw new Error(`npm view ${ENGINE_PINS[engine].package} failed`);
  return version;
}
