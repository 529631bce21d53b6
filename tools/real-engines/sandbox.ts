import { spawn, spawnSync } from "node:child_process";
import { appendFileSync, mkdirSync, writeFileSync } from "node:fs";
import { constants } from "node:os";
import { join } from "node:path";
import { z } from "zod";
import { readCommandLine } from "../cli-args.js";
import { ScriptedModelServer } from "../model-server/model-server.js";
import { loadModelScenario } from "../model-server/scenario.js";
import { engineBinary, type RealEngine } from "./pins.js";

const HELP = [
  "usage: unshare --net -- bin/engine-sandbox.mjs --engine claude|codex --scenario <model-scenario.json>",
  "         --record <requests.jsonl> --home <dir> [--codex-approvals <policy>] [--codex-sandbox <mode>]",
  "         [--log-inputs <file>]",
  "         [-- <extra CLI arguments>]",
  "",
  "Runs one real engine CLI the way the engine-runner runs an engine (stdin/stdout are the engine's), inside a",
  "network namespace where only loopback exists, with a scripted model server on that loopback. Telemetry,",
  "updates and plugins are off. Exits with the CLI's status.",
  "",
  "  --engine <name>            claude (stream-json) or codex (app-server)",
  "  --scenario <file>          the model server's replies",
  "  --record <file>            JSONL of every model request",
  "  --home <dir>               HOME, CLAUDE_CONFIG_DIR / CODEX_HOME and the working directory live here",
  "  --codex-approvals <p>      codex approval_policy (default never); on-request lets the model ask",
  "  --codex-sandbox <mode>     codex sandbox_mode (default danger-full-access: the namespace is the sandbox)",
  "  --log-inputs <file>        append every stdin line the CLI is given (as engine-sim does)",
  "  --engine-version <v>       run another installed version than the pin (npm run engines:drift)",
  "  -h, --help                 this text",
].join("\n");

/** How long the sandbox watches for a scenario's input files (longer than any test's conversation). */
const INPUT_FILE_LIMIT_MS = 10 * 60_000;

const separator = process.argv.indexOf("--", 2);
const own = separator < 0 ? process.argv.slice(2) : process.argv.slice(2, separator);
const extra = separator < 0 ? [] : process.argv.slice(separator + 1);
const args = readCommandLine(
  {
    name: "sandbox",
    help: HELP,
    options: {
      engine: { type: "string" },
      scenario: { type: "string" },
      record: { type: "string" },
      home: { type: "string" },
      "codex-approvals": { type: "string" },
      "codex-sandbox": { type: "string" },
      "log-inputs": { type: "string" },
      "engine-version": { type: "string" },
    },
    schema: z.strictObject({
      engine: z.enum(["claude", "codex"]),
      scenario: z.string().min(1),
      record: z.string().min(1),
      home: z.string().min(1),
      "codex-approvals": z.enum(["never", "on-request", "on-failure"]).default("never"),
      "codex-sandbox": z
        .enum(["read-only", "workspace-write", "danger-full-access"])
        .default("danger-full-access"),
      "log-inputs": z.string().min(1).optional(),
      "engine-version": z
        .string()
        .regex(/^[\w.-]+$/)
        .optional(),
    }),
  },
  own,
);

const loopback = spawnSync("ip", ["link", "set", "lo", "up"], { stdio: "inherit" });
if (loopback.status !== 0) {
  process.stderr.write("sandbox: cannot bring loopback up (run inside `unshare --net` as root)\n");
  process.exit(70);
}

const scenario = loadModelScenario(args.scenario);
const server = new ScriptedModelServer(scenario, args.record);
const port = await server.listen(0);
const work = join(args.home, "work");
mkdirSync(work, { recursive: true });
for (const [text, file] of Object.entries(scenario.inputFiles))
  void server.inputs
    .until(text, INPUT_FILE_LIMIT_MS)
    .then((given) => given && writeFileSync(join(work, file), ""));
const engine: RealEngine = args.engine;
const { env, argv } = engine === "claude" ? claudeSetup(port) : codexSetup(port);

const child = spawn(engineBinary(engine, args["engine-version"]), [...argv, ...extra], {
  cwd: work,
  env: { PATH: process.env.PATH ?? "/usr/bin:/bin", HOME: args.home, LANG: "C.UTF-8", ...env },
  stdio: ["pipe", "inherit", "inherit"],
});
const inputLog = args["log-inputs"];
process.stdin.on("data", (chunk: Buffer) => {
  if (inputLog) appendFileSync(inputLog, chunk);
  server.inputs.give(chunk.toString("utf8"));
  child.stdin?.write(chunk);
});
process.stdin.on("end", () => child.stdin?.end());
child.on("error", (error) => {
  process.stderr.write(`sandbox: cannot start ${engine} (${error.message}); run npm run engines:install\n`);
  void server.close().finally(() => process.exit(69));
});
for (const signal of ["SIGTERM", "SIGINT"] as const) process.on(signal, () => child.kill(signal));
child.on("exit", (code, signal) => {
  void server.close().finally(() => process.exit(code ?? 128 + (signal ? constants.signals[signal] : 0)));
});

function claudeSetup(modelPort: number) {
  const configDir = join(args.home, ".claude");
  mkdirSync(configDir, { recursive: true });
  return {
    env: {
      CLAUDE_CONFIG_DIR: configDir,
      ANTHROPIC_BASE_URL: `http://127.0.0.1:${modelPort}`,
      ANTHROPIC_API_KEY: "sk-ant-offline-test",
      DISABLE_TELEMETRY: "1",
      DISABLE_ERROR_REPORTING: "1",
      DISABLE_AUTOUPDATER: "1",
      CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC: "1",
    },
    argv: [
      "-p",
      "--input-format",
      "stream-json",
      "--output-format",
      "stream-json",
      "--verbose",
      "--replay-user-messages",
    ],
  };
}

function codexSetup(modelPort: number) {
  const codexHome = join(args.home, ".codex");
  mkdirSync(codexHome, { recursive: true });
  writeFileSync(
    join(codexHome, "config.toml"),
    [
      'model = "scripted-model"',
      'model_provider = "scripted"',
      `approval_policy = "${args["codex-approvals"]}"`,
      `sandbox_mode = "${args["codex-sandbox"]}"`,
      "check_for_update_on_startup = false",
      "",
      "[model_providers.scripted]",
      'name = "scripted"',
      `base_url = "http://127.0.0.1:${modelPort}/v1"`,
      'wire_api = "responses"',
      'env_key = "OPENAI_API_KEY"',
      "request_max_retries = 0",
      "stream_max_retries = 0",
      "",
      "[analytics]",
      "enabled = false",
      "",
      "[features]",
      "plugins = false",
      "",
    ].join("\n"),
  );
  return { env: { CODEX_HOME: codexHome, OPENAI_API_KEY: "sk-offline-test" }, argv: ["app-server"] };
}
