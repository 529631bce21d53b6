import { STREAM_CATALOG } from "../../libs/contract/catalog.js";
import { existsSync, mkdirSync } from "node:fs";
import { join } from "node:path";
import Ajv2020 from "ajv/dist/2020.js";
import { chromium, type Browser, type Locator, type Page } from "playwright-core";
import { afterAll, beforeAll, describe, expect, it } from "vitest";

import { DeviceProbe, until } from "../e2e/acceptance/acceptance-kit.js";
import { E2EStack, MACHINE } from "../e2e/stack.js";

/**
 * The operator console in a real browser (Debian's chromium driven by playwright-core) on a stack of separate
 * service processes that has served a merged group, a suppressed, an uncertain and a failed result, and dead-lettered
 * the first resolved result after the tts-dispatcher died between its outbox entry and its playback job.
 */
const CHROMIUM = process.env.CHROMIUM_PATH ?? "/usr/bin/chromium";
const SCREENSHOTS = join(process.cwd(), "reports", "console-browser");
const AGENTS = { steer: "console-steer", answer: "console-answer", failed: "console-failed" } as const;
const DEVICE = "lamp-console";
const QUIET_DEVICE = "lamp-console-noack";

let stack: E2EStack;
let browser: Browser;
let page: Page;
/** What the browser reported as blocked by a Content-Security-Policy, page by page. */
const violations: string[] = [];
const ids = { merged: "", suppressed: "", uncertain: "", failed: "", deadLettered: "" };

async function resultIdOf(probe: DeviceProbe, runId: string): Promise<string> {
  const run = await probe.runUntil(runId, (candidate) => candidate.resultId !== null, 60_000);
  return run.resultId ?? "";
}

async function serveTheStory(): Promise<void> {
  const lamp = await stack.lamp(DEVICE);
  const probe = new DeviceProbe(stack, DEVICE);
  const say = (agentId: string, text: string, replyRoute: "voice" | "display" = "voice") =>
    lamp.say({ agentId, machineId: MACHINE, text, replyRoute });

  // The first result through the tts-dispatcher kills it after its outbox entry; restarted, the entry has been
  // delivered twice (STREAM_MAX_DELIVERIES=1) and is dead-lettered before its playback job exists.
  const first = await say(AGENTS.answer, "What time is it?");
  ids.deadLettered = await resultIdOf(probe, first.runId);
  await stack.process("tts-dispatcher").exit();
  await stack.restart("tts-dispatcher");
  await until(
    "the dead letter",
    () => stack.redis.xlen(stack.keys.deadLetter(STREAM_CATALOG.osResolved.name)),
    (length) => length === 1,
  );

  const a = await say(AGENTS.steer, "Build a house.");
  await say(AGENTS.steer, "Make the roof red.");
  ids.merged = await resultIdOf(probe, a.runId);
  await probe.resultUntil(ids.merged, (result) => result.playback?.state === "played");

  const shown = await say(AGENTS.answer, "Show me the plan.", "display");
  ids.suppressed = await resultIdOf(probe, shown.runId);
  await probe.resultUntil(ids.suppressed, (result) => result.playback?.state === "suppressed");

  const failed = await say(AGENTS.failed, "Anything.");
  ids.failed = await resultIdOf(probe, failed.runId);
  await probe.resultUntil(ids.failed, (result) => result.playback?.state === "suppressed");

  const quiet = await stack.lamp(QUIET_DEVICE, { ack: false });
  const quietProbe = new DeviceProbe(stack, QUIET_DEVICE);
  const unheard = await quiet.say({ agentId: AGENTS.answer, machineId: MACHINE, text: "Read it aloud." });
  ids.uncertain = await resultIdOf(quietProbe, unheard.runId);
  await quietProbe.resultUntil(ids.uncertain, (result) => result.playback?.state === "uncertain");
}

/** What a reader sees of an element: its text with the page source's line breaks and indentation collapsed. */
async function shown(locator: Locator): Promise<string> {
  return ((await locator.textContent()) ?? "").replace(/\s+/g, " ").trim();
}

async function shot(name: string): Promise<void> {
  await page.screenshot({ path: join(SCREENSHOTS, `${name}.png`), fullPage: true });
}

const resultUrl = (deviceId: string, resultId: string) =>
  `${stack.url("console")}/console/results/${deviceId}/${resultId}`;

const HAS_CHROMIUM = existsSync(CHROMIUM);

beforeAll(async () => {
  if (!HAS_CHROMIUM) return;
  mkdirSync(SCREENSHOTS, { recursive: true });
  stack = await E2EStack.start({
    label: "console-browser",
    startTimeoutMs: 180_000,
    agents: [
      { agentId: AGENTS.steer, protocol: "codex-app-server", scenario: "codex-steer-merged" },
      { agentId: AGENTS.answer, protocol: "claude-stream-json", scenario: "claude-answer-each-input" },
      { agentId: AGENTS.failed, protocol: "codex-app-server", scenario: "codex-failed-turn" },
    ],
    env: {
      NODE_ENV: "test",
      FAILPOINT: "tts-dispatcher.after-outbox",
      STREAM_MAX_DELIVERIES: "1",
      PLAYBACK_ACK_TIMEOUT_MS: "2000",
    },
  });
  await serveTheStory();
  browser = await chromium.launch({ executablePath: CHROMIUM, args: ["--no-sandbox"] });
  page = await browser.newPage({ viewport: { width: 1400, height: 1000 } });
  page.on("console", (message) => {
    if (message.text().includes("Content Security Policy"))
      violations.push(`${page.url()}: ${message.text()}`);
  });
  await page.goto(`${stack.url("console")}/console/login`);
  await page.getByLabel(/Operator token/).fill(await stack.token("ops", "operator"));
  await page.getByRole("button", { name: "Sign in" }).click();
  await page.waitForURL(/\/console\/$/);
}, 420_000);

afterAll(async () => {
  await browser?.close();
  await stack?.stop();
});

describe.skipIf(!HAS_CHROMIUM)("operator console in a browser", { timeout: 120_000 }, () => {
  it("the overview lists both devices with their sessions, the stream lag per group and the dead letter", async () => {
    await expect.poll(() => page.locator("#live-status").textContent()).toBe("Live updates: on");
    const device = page.locator(`tr[data-device="${DEVICE}"]`);
    await device.waitFor();
    expect(await device.textContent()).toContain("connected via device-gateway-e2e");
    expect(await device.textContent()).toContain("turn.correlation.v2");
    expect(await page.locator(`tr[data-device="${QUIET_DEVICE}"]`).count()).toBe(1);
    expect(await page.locator('tr[data-group="os.resolved/tts-dispatcher"] .lag').textContent()).toBe("0");
    const letter = page.locator("tr[data-dead-letter]");
    expect(await letter.count()).toBe(1);
    expect(await letter.textContent()).toContain("MAX_DELIVERIES");
    expect(await letter.textContent()).toContain(ids.deadLettered);
    await shot("overview");
  });

  it("a merged group is drawn as one answer for two requests, spoken once, with its timeline", async () => {
    await page.goto(resultUrl(DEVICE, ids.merged));
    const group = page.getByRole("figure", { name: "One answer for 2 requests" });
    expect(await group.locator("li[data-member]").allTextContents()).toEqual([
      expect.stringContaining("Build a house."),
      expect.stringContaining("Make the roof red."),
    ]);
    expect(await shown(page.locator(".outcome"))).toBe("completed");
    expect(await shown(page.locator(".full-text"))).toBe("STEERED_RESULT");
    expect(await shown(page.locator(".playback-state"))).toBe("played");
    const steps = await page
      .locator("li[data-step]")
      .evaluateAll((items) => items.map((item) => item.getAttribute("data-step")));
    expect(steps).toEqual(
      expect.arrayContaining([
        "outbox:queued",
        "answer:sending",
        "answer:played",
        "answer:Lamp ack finished",
      ]),
    );
    await shot("merged-group");
  });

  it("the suppressed, failed and uncertain results show their state and reason", async () => {
    await page.goto(resultUrl(DEVICE, ids.suppressed));
    expect(await shown(page.locator(".playback-state"))).toBe("suppressed (not_voice_route)");
    await shot("suppressed");
    await page.goto(resultUrl(DEVICE, ids.failed));
    expect(await shown(page.locator(".outcome"))).toBe("failed");
    expect(await shown(page.locator(".playback-state"))).toBe("suppressed (failed_result)");
    expect(await page.locator('li[data-step^="notice:"]').count()).toBeGreaterThan(0);
    await shot("failed");
    await page.goto(resultUrl(QUIET_DEVICE, ids.uncertain));
    expect(await shown(page.locator(".playback-state"))).toBe("uncertain (ack_timeout)");
    await shot("uncertain");
  });

  it("runs are filtered by device and state on the server, with the merged group marked", async () => {
    await page.goto(`${stack.url("console")}/console/runs`);
    await page.getByLabel("Device").selectOption(DEVICE);
    await page.getByLabel("State").selectOption("resolved");
    await page.getByRole("button", { name: "Show" }).click();
    await page.waitForURL(/deviceId=lamp-console&state=resolved/);
    const rows = page.locator("tr[data-run]");
    expect(await rows.count()).toBe(5);
    expect(
      new Set(await rows.evaluateAll((items) => items.map((item) => item.getAttribute("data-state")))),
    ).toEqual(new Set(["resolved"]));
    expect(await page.locator(".group").allTextContents()).toEqual([
      "one answer for 2 requests",
      "one answer for 2 requests",
    ]);
    await shot("runs");
  });

  it("redrive moves the dead letter back: it leaves the dead letters and its answer is spoken", async () => {
    await page.goto(`${stack.url("console")}/console/`);
    await page.getByRole("button", { name: /^Redrive dead letter/ }).click();
    await page.waitForURL(/redrivenAs=/);
    expect(await page.getByRole("status").filter({ hasText: "moved back to os.resolved" }).count()).toBe(1);
    expect(await stack.redis.xlen(stack.keys.deadLetter(STREAM_CATALOG.osResolved.name))).toBe(0);
    await new DeviceProbe(stack, DEVICE).resultUntil(
      ids.deadLettered,
      (result) => result.playback?.state === "played",
    );
    await page.goto(resultUrl(DEVICE, ids.deadLettered));
    expect(await shown(page.locator(".playback-state"))).toBe("played");
    await page.goto(`${stack.url("console")}/console/`);
    expect(await page.locator("tr[data-dead-letter]").count()).toBe(0);
    await shot("after-redrive");
  });

  it("the console's own pages ran under the strict Content-Security-Policy without a violation", () => {
    expect(violations).toEqual([]);
  });

  it("Bull Board shows the playback queue under the same policy; only its decoration is blocked", async () => {
    violations.length = 0;
    await page.goto(`${stack.url("console")}/console/queues/`);
    await page.getByText("lamp-playback").first().waitFor();
    await shot("bull-board");
    // Its loading placeholder's inline styles and its Google Fonts stylesheet are refused; never a script.
    expect(violations.filter((violation) => /Refused to (load|execute)[^.]*script/.test(violation))).toEqual(
      [],
    );
  });

  it("the API docs render under the same policy on the console's session", async () => {
    violations.length = 0;
    await page.goto(`${stack.url("console")}/docs`);
    await page.locator(".swagger-ui .title").first().waitFor();
    expect(await page.locator(".opblock-tag").allTextContents()).toEqual(
      expect.arrayContaining([expect.stringContaining("console")]),
    );
    await shot("api-docs");
    expect(violations.filter((violation) => /Refused to (load|execute)[^.]*script/.test(violation))).toEqual(
      [],
    );
  });

  it("signing out needs the page's CSRF token, which the sign-out button sends", async () => {
    await page.goto(`${stack.url("console")}/console/`);
    await page.getByRole("button", { name: "Sign out" }).click();
    await page.waitForURL(/\/console\/login$/);
    const refused = await page.goto(`${stack.url("console")}/console/`);
    expect(refused?.status()).toBe(401);
  });

  it("the stack's real answers validate against the OpenAPI document it serves", async () => {
    const operator = { authorization: `Bearer ${await stack.token("ops", "operator")}` };
    const base = stack.url("device-gateway");
    const document = (await (await fetch(`${base}/openapi.json`, { headers: operator })).json()) as {
      paths: Record<
        string,
        Record<string, { responses: Record<string, { content?: Record<string, { schema: object }> }> }>
      >;
    };
    const ajv = new Ajv2020({ strict: false });
    for (const [path, url] of [
      ["/v1/runs", `/v1/runs?deviceId=${DEVICE}`],
      ["/v1/results/{resultId}", `/v1/results/${ids.merged}?deviceId=${DEVICE}`],
      ["/v1/results/{resultId}", `/v1/results/${ids.uncertain}?deviceId=${QUIET_DEVICE}`],
      ["/v1/rejections", `/v1/rejections?deviceId=${DEVICE}`],
    ] as const) {
      const response = await fetch(`${base}${url}`, { headers: operator });
      expect(response.status, url).toBe(200);
      const validate = ajv.compile(
        document.paths[path]?.get?.responses["200"]?.content?.["application/json"]?.schema ?? {},
      );
      expect(validate(await response.json()), `${url}: ${ajv.errorsText(validate.errors)}`).toBe(true);
    }
  });
});
