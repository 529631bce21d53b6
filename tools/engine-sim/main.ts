import { parseSimArgs, type SimArgs } from "./args.js";
import { EndOfInput, LiveIo } from "./live-io.js";
import { ClaudeReplay } from "./replay/claude-replay.js";
import { CodexReplay } from "./replay/codex-replay.js";
import { playRecordedRuntime } from "./replay/replay-player.js";
import { loadTranscriptRuntimes } from "./replay/transcript.js";
import { loadScenario } from "./scripted/scenario.js";
import { playScenarioRuntime } from "./scripted/scenario-player.js";
import { nextRuntimeIndex } from "./state-file.js";
import { errorMessage } from "../../libs/errors/error-message.js";

/**
 * engine-sim: a stand-in for the Claude Code stream-json CLI or the Codex app-server, speaking the real protocol
 * on stdin/stdout. It replays a corpus transcript or plays a scripted scenario against whatever the host writes.
 * When the runtimes to play are exhausted it stays silent; like the real CLIs it exits when stdin ends.
 */
async function main(args: SimArgs): Promise<void> {
  const io = new LiveIo(args["log-inputs"]);
  const runtimeIndex = nextRuntimeIndex(args.state);
  let play: (() => Promise<void>) | undefined;
  if (args.replay) {
    const steps = loadTranscriptRuntimes(args.replay)[runtimeIndex];
    const protocol = args.protocol === "claude-stream-json" ? new ClaudeReplay() : new CodexReplay();
    if (steps) play = () => playRecordedRuntime(steps, protocol, io);
  } else if (args.scenario) {
    const scenario = loadScenario(args.scenario);
    if (scenario.protocol !== args.protocol)
      throw new Error(`${args.scenario} is a ${scenario.protocol} scenario, not ${args.protocol}`);
    const runtime = scenario.runtimes[runtimeIndex];
    if (runtime) play = () => playScenarioRuntime(runtime, args.protocol, io);
  }
  io.start();
  try {
    await play?.();
    await io.untilEnd();
  } catch (error) {
    if (!(error instanceof EndOfInput)) throw error;
  }
  await io.exit(0);
}

const commandLine = parseSimArgs(process.argv.slice(2));
try {
  await main(commandLine);
} catch (error) {
  process.stderr.write(`engine-sim: ${errorMessage(error)}\n`);
  process.exit(2);
}
