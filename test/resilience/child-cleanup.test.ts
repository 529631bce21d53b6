import { spawn } from "node:child_process";
import { describe, expect, it } from "vitest";
import { projectRoot } from "../helpers/child-process.js";
import { waitFor } from "../helpers/test-redis.js";

function alive(pid: number): boolean {
  try {
    process.kill(pid, 0);
    return true;
  } catch {
    return false;
  }
}

describe("TsProcess cleanup", () => {
  it.each([
    { mode: "fail", ending: "fails with an uncaught error" },
    { mode: "hang", ending: "is SIGKILLed" },
  ])(
    "a test worker that $ending leaves no service or engine behind",
    async ({ mode }) => {
      const worker = spawn(
        process.execPath,
        ["--import", "tsx", "test/resilience/fixtures/test-worker.ts", mode],
        {
          cwd: projectRoot,
          stdio: ["ignore", "pipe", "pipe"],
        },
      );
      const exited = new Promise<number | null>((resolve) => worker.once("exit", (code) => resolve(code)));
      let output = "";
      const pids = await new Promise<number[]>((resolve, reject) => {
        worker.stdout.on("data", (chunk: Buffer) => {
          output += chunk.toString();
          const match = /pids (\d+) (\d+)/.exec(output);
          if (match) resolve([Number(match[1]), Number(match[2])]);
        });
        void exited.then(() => reject(new Error(`worker exited before reporting its children: ${output}`)));
      });
      expect(pids.every(alive)).toBe(true);
      if (mode === "hang") worker.kill("SIGKILL");
      expect(await exited).toBe(mode === "fail" ? 1 : null);
      const left = await waitFor(
        () => pids.filter(alive),
        (running) => running.length === 0,
        { timeoutMs: 5_000, intervalMs: 50 },
      );
      expect(left).toEqual([]);
    },
    60_000,
  );
});
