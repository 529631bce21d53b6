import { homedir } from "node:os";
import { join } from "node:path";

/** The real engine CLIs the suite is proven against (docs/real-engines.md); `engines:drift` tries the newest. */
export const ENGINE_PINS = {
  claude: { package: "@anthropic-ai/claude-code", version: "2.1.332", bin: "claude" },
  codex: { package: "@openai/codex", version: "0.171.0", bin: "codex" },
} as const;
export type RealEngine = keyof typeof ENGINE_PINS;

/** Where installed CLIs live: outside the project, so `npm install` stays small (LAMPLINE_ENGINES_DIR overrides). */
export function enginesDir(env: NodeJS.ProcessEnv = process.env): string {
  return (
    env.LAMPLINE_ENGINES_DIR ?? join(env.XDG_CACHE_HOME ?? join(homedir(), ".cache"), "lampline-engines")
  );
}

export function engineFolder(engine: RealEngine, version: string = ENGINE_PINS[engine].version): string {
  return join(enginesDir(), `${engine}-${version}`);
}

export function engineBinary(engine: RealEngine, version?: string): string {
  return join(engineFolder(engine, version), "node_modules", ".bin", ENGINE_PINS[engine].bin);
}
