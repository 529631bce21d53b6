import { mkdtempSync, readdirSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { describe, expect, it } from "vitest";
import { STORY } from "../../tools/demo/story.js";
import { TsProcess } from "../helpers/child-process.js";

const VERDICT = /^ {2}([✓✗]) \[(\d)\/(\d)\] (.+?) — (.+)$/gmu;

/** `npm run demo` as CI runs it: standard input is not a terminal, so it stops after the story. */
async function runDemo(env: Record<string, string | undefined> = {}) {
  const out = mkdtempSync(join(tmpdir(), "lampline-demo-"));
  const demo = new TsProcess(
    "npm run demo",
    env,
    [],
    ["npm", ["run", "--silent", "demo", "--", "--out", out]],
  );
  const code = await demo.exit();
  const verdicts = [...demo.log.matchAll(VERDICT)].map(([, mark, index, total, title, reached]) => ({
    mark,
    step: `${index}/${total}`,
    title,
    reached,
  }));
  return { code, log: demo.log, out, verdicts };
}

function jwtPayload(token: string): unknown {
  return JSON.parse(Buffer.from(token.split(".")[1] ?? "", "base64url").toString());
}

describe("npm run demo", () => {
  it("plays the whole story non-interactively: every step reaches its state, the audit holds, exit 0", async () => {
    const { code, log, out, verdicts } = await runDemo();
    expect(code, log).toBe(0);
    expect(verdicts).toEqual(
      STORY.map((step, index) => ({
        mark: "✓",
        step: `${index + 1}/${STORY.length}`,
        title: step.title,
        reached: expect.stringMatching(/^reached: /),
      })),
    );
    expect(verdicts.map((verdict) => verdict.reached)).toEqual([
      expect.stringMatching(
        /^reached: resolved · completed, spoken once \(answer-[0-9a-f]{40}\.(wav|txt)\)$/,
      ),
      "reached: A and B resolved by one result listing both · completed, spoken once",
      "reached: A and B resolved by two results · completed, each spoken once",
      "reached: A and B ended unknown · RESULT_EVIDENCE_MISSING (the Lamp was told why), nothing spoken",
      "reached: resolved · failed, the answer withheld (failed_result) and the short notice spoken",
      "reached: resolved · completed, playback uncertain (ack_timeout), not sent again",
      expect.stringMatching(/^reached: a new playback of the same result, spoken \(.+\.(wav|txt)\)$/),
    ]);
    expect(log).toContain("  ✓ audit — 7 playbacks for 6 results, each sent once\n");
    expect(log).toContain("demo: every step reached its expected state\n");

    // Seven utterances: five answers, one failure notice, one repeat, each in its own file in the folder it named.
    expect(log).toMatch(/^spoken files: .+$/m);
    expect(readdirSync(join(out, "spoken")).filter((file) => /\.(wav|txt)$/.test(file))).toHaveLength(7);
    expect(log).toMatch(/^console: http:\/\/127\.0\.0\.1:\d+\/console\/$/m);
    const operatorToken = /^operator token: (\S+)$/m.exec(log)?.[1] ?? "";
    expect(jwtPayload(operatorToken)).toMatchObject({ aud: "os", role: "operator" });
  }, 300_000);

  it("exits 1 and says which steps failed when the system does not reach a step's state", async () => {
    // One unresolved run per device: every step that asks twice is refused TOO_MANY_PENDING_RUNS at its second ask.
    const { code, log, verdicts } = await runDemo({ LAMP_MAX_PENDING_RUNS: "1" });
    expect(code, log).toBe(1);
    expect(verdicts[0]).toMatchObject({ mark: "✓", title: "A request" });
    expect(verdicts[1]).toMatchObject({
      mark: "✗",
      title: "A steering correction",
      reached: expect.stringMatching(
        /^not reached: a run for "Make the roof red\." \(the OS answered .*TOO_MANY_PENDING_RUNS/,
      ),
    });
    expect(verdicts).toHaveLength(STORY.length);
    expect(log).toContain("demo: some steps did not reach their expected state\n");
  }, 300_000);
});
