import { execFile } from "node:child_process";
import { describe, expect, it } from "vitest";
import { projectRoot } from "../helpers/child-process.js";

interface Finished {
  code: number | null;
  stdout: string;
  stderr: string;
}

function run(command: readonly string[]): Promise<Finished> {
  const [file, ...args] = command;
  return new Promise((resolve) => {
    execFile(file ?? "", args, { cwd: projectRoot }, (error, stdout, stderr) =>
      resolve({ code: error ? (typeof error.code === "number" ? error.code : null) : 0, stdout, stderr }),
    );
  });
}

/** Every command a user runs, as the README names it, with one argument it must refuse. */
const COMMANDS = [
  {
    name: "token",
    command: ["npm", "run", "-s", "token", "--"],
    bad: ["--ttl", "soon", "--device", "lamp-1"],
  },
  {
    name: "revoke",
    command: ["npm", "run", "-s", "revoke", "--"],
    bad: ["--side", "sideways", "--device", "x"],
  },
  { name: "chaos", command: ["npm", "run", "-s", "chaos", "--"], bad: ["--results", "0"] },
  { name: "bench", command: ["npm", "run", "-s", "bench", "--"], bad: ["no-such-bench"] },
  {
    name: "bench extractor",
    command: ["npm", "run", "-s", "bench", "--", "extractor"],
    bad: ["--records", "x"],
  },
  {
    name: "bench e2e",
    command: ["npm", "run", "-s", "bench", "--", "e2e"],
    bad: ["--mode", "sideways"],
  },
  {
    name: "bench steady",
    command: ["npm", "run", "-s", "bench", "--", "steady"],
    bad: ["--retention-seconds", "10"],
  },
  {
    name: "lamp-sim",
    command: ["node", "bin/lamp-sim.mjs"],
    bad: ["--url", "http://example", "--token", "t"],
  },
  {
    name: "engine-sim",
    command: ["node", "bin/engine-sim.mjs"],
    bad: ["--protocol", "telnet", "--scenario", "x"],
  },
  { name: "demo", command: ["npm", "run", "-s", "demo", "--"], bad: ["--port", "eighty"] },
] as const;

describe.concurrent("every command line tool", { timeout: 60_000 }, () => {
  it.each(COMMANDS)("$name --help prints its usage on stdout and exits 0", async ({ command }) => {
    const finished = await run([...command, "--help"]);
    expect(finished).toMatchObject({ code: 0, stderr: "" });
    expect(finished.stdout).toMatch(/^usage: /);
    expect(finished.stdout.split("\n").length).toBeGreaterThan(2);
  });

  it.each(COMMANDS)(
    "$name refuses a bad argument with one line and exit 64",
    async ({ name, command, bad }) => {
      const finished = await run([...command, ...bad]);
      expect(finished.code).toBe(64);
      expect(finished.stdout).toBe("");
      expect(finished.stderr.trimEnd().split("\n")).toEqual([
        expect.stringMatching(new RegExp(`^${name}: .+ \\(see --help\\)$`)),
      ]);
    },
  );

  it.each(COMMANDS)("$name refuses an unknown option by name", async ({ name, command }) => {
    const finished = await run([...command, "--no-such-option"]);
    expect(finished.code).toBe(64);
    if (name === "bench")
      expect(finished.stderr).toMatch(
        /^bench: unknown bench '--no-such-option' \(one of: extractor, e2e(, [a-z-]+)*\) \(see --help\)\n$/,
      );
    else expect(finished.stderr).toBe(`${name}: Unknown option '--no-such-option' (see --help)\n`);
  });
});
