import { join } from "node:path";
import type { RealEngine } from "./pins.js";
import { projectRoot } from "./project-root.js";

export interface SandboxOptions {
  engine: RealEngine;
  /** A model scenario: a file in test/real-engines/model-scenarios (name without .json). */
  scenario: string;
  /** JSONL of every model request. */
  record: string;
  home: string;
  engineVersion?: string;
  logInputs?: string;
  codexApprovals?: string;
  codexSandbox?: string;
  /** Arguments for the CLI itself. */
  cliArgs?: readonly string[];
}

/** How to run one real CLI in its loopback-only sandbox: `unshare --net -- bin/engine-sandbox.mjs …`. */
export function sandboxCommand(options: SandboxOptions): { command: "unshare"; args: string[] } {
  const optional = (flag: string, value: string | undefined) => (value === undefined ? [] : [flag, value]);
  const args = [
    "--net",
    "--",
    process.execPath,
    join(projectRoot, "bin", "engine-sandbox.mjs"),
    ...["--engine", options.engine],
    ...[
      "--scenario",
      join(projectRoot, "test", "real-engines", "model-scenarios", `${options.scenario}.json`),
    ],
    ...["--record", options.record, "--home", options.home],
    ...optional("--engine-version", options.engineVersion),
    ...optional("--log-inputs", options.logInputs),
    ...optional("--codex-approvals", options.codexApprovals),
    ...optional("--codex-sandbox", options.codexSandbox),
    ...(options.cliArgs && options.cliArgs.length > 0 ? ["--", ...options.cliArgs] : []),
  ];
  return { command: "unshare", args };
}
