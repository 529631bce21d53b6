import { tmpdir } from "node:os";
import { join } from "node:path";
import { parseLampSimArgs, type LampSimArgs } from "./args.js";
import { LampSim, type Emit } from "./lamp-sim.js";
import { loadScript, type ScriptStep } from "./script.js";
import { Speaker } from "./speaker.js";
import { errorMessage } from "../../libs/errors/error-message.js";

/**
 * lamp-sim: a Lamp client over the real WebSocket for tests, the demo and benchmarks. It prints one JSON line per
 * event on stdout (and each run.update as a readable line on stderr) and exits after `--exit-after` playbacks, on SIGTERM, or when the OS closes the connection.
 */
const emit: Emit = (event, fields = {}) => {
  process.stdout.write(`${JSON.stringify({ event, at: Date.now(), ...fields })}\n`);
  // What happened to each request, readable beside the JSON: `#3 run 3f2a9c1e resolved · completed (result r-1)`.
  if (event === "run.update") process.stderr.write(`lamp-sim: ${String(fields.line)}\n`);
};

async function runStep(sim: LampSim, step: ScriptStep): Promise<void> {
  if ("say" in step) sim.say(step);
  else if ("waitPlaybacks" in step) await sim.waitForPlaybacks(step.waitPlaybacks);
  else if ("sleepMs" in step) await new Promise((resolve) => setTimeout(resolve, step.sleepMs));
  else if ("repeat" in step) sim.repeat(step.repeat);
  else sim.cancel(step.cancel);
}

async function main(args: LampSimArgs): Promise<number> {
  const sim = new LampSim({
    url: args.url,
    token: args.token,
    speaker: new Speaker(args["out-dir"] ?? join(tmpdir(), `lamp-sim-${process.pid}`)),
    faults: {
      dropAcks: args["drop-acks"],
      disconnectAfterReceive: args["disconnect-after-receive"],
      reject: args.reject,
      slowMs: args["slow-ms"],
    },
    exitAfter: args["exit-after"],
    emit,
  });
  process.once("SIGTERM", () => sim.finish(0));
  process.once("SIGINT", () => sim.finish(0));
  await sim.connect();
  if (args.say && args.agent && args.machine)
    sim.say({
      say: args.say,
      agent: args.agent,
      machine: args.machine,
      route: args.route,
      target: args.target,
      expiresInMs: args["expires-in-ms"],
    });
  for (const step of args.script ? loadScript(args.script) : []) await runStep(sim, step);
  return sim.exited;
}

const commandLine = parseLampSimArgs(process.argv.slice(2));
try {
  process.exit(await main(commandLine));
} catch (error) {
  emit("error", { message: errorMessage(error) });
  process.stderr.write(`lamp-sim: ${errorMessage(error)}\n`);
  process.exit(2);
}
