import { spawnSync } from "node:child_process";
import { appendFileSync, mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterAll, beforeAll, describe, expect, it, vi } from "vitest";
import { STREAM_CATALOG } from "../../libs/contract/catalog.js";
import { STREAMS } from "../../libs/contract/streams.js";
import { DeliveryMarkers } from "../../services/engine-runner/delivery-marker.js";
import { projectRoot } from "../helpers/child-process.js";
import { createTestRedis, type TestRedis } from "../helpers/test-redis.js";
import { engineSimAgent, loggedInputs, writeAgentsFile, type EngineSimAgent } from "./agents-file.js";
import {
  dispatcher,
  hasInbound,
  inboundFrames,
  recordsOf,
  runtimesOf,
  seqGapFree,
  waitForRecords,
  type Dispatcher,
} from "./engine-records.js";
import { restartRunner, startRunner, type RunnerProcess } from "./runner-process.js";

// Real engine processes boot through tsx; on a loaded machine that takes seconds each.
vi.setConfig({ testTimeout: 150_000, hookTimeout: 150_000 });
const MACHINE = "machine-crash";
const CLAUDE = "claude-kill";
const TAIL = "claude-tail";
const GROUP = STREAM_CATALOG.harnessDispatch.consumers.engineRunner(MACHINE).group;

const row = (n: number) =>
  JSON.stringify({ type: "user", uuid: `row-${n}`, message: { content: `row ${n}` } });

describe("engine-runner killed mid-flow and restarted (real processes)", () => {
  let t: TestRedis;
  let workDir: string;
  let runner: RunnerProcess;
  let send: Dispatcher;
  let engine: EngineSimAgent;
  let transcript: string;
  let markers: DeliveryMarkers;

  beforeAll(async () => {
    t = createTestRedis("crash");
    workDir = mkdtempSync(join(tmpdir(), "engine-crash-"));
    transcript = join(workDir, "session.jsonl");
    writeFileSync(transcript, "");
    engine = engineSimAgent({
      agentId: CLAUDE,
      machineId: MACHINE,
      protocol: "claude-stream-json",
      scenario: "claude-answer-each-input",
      workDir,
      advanceRuntimes: false,
    });
    const agentsFile = writeAgentsFile(workDir, [
      engine.config,
      { agentId: TAIL, machineId: MACHINE, engine: "claude-transcript", path: transcript },
    ]);
    runner = await startRunner({
      REDIS_URL: t.url,
      KEY_PREFIX: t.keys.prefix,
      AGENTS_FILE: agentsFile,
      CONSUMER_NAME: "runner-crash",
    });
    send = dispatcher(t.redis, t.keys, MACHINE);
    markers = new DeliveryMarkers(t.redis, t.keys, 3600);
  });

  afterAll(async () => {
    await runner?.process.kill("SIGTERM");
    await t.cleanup();
    rmSync(workDir, { recursive: true, force: true });
  });

  it("writes no input twice across SIGKILL + redelivery, and continues in a new runtime; the tail reads each row once", async () => {
    const isResult = (frame: Record<string, unknown>) => frame.type === "result";
    const a = await send.input(CLAUDE, "before the crash");
    await waitForRecords(t.redis, t.keys, CLAUDE, (records) => hasInbound(records, isResult));

    appendFileSync(transcript, `${row(1)}\n${row(2)}\n${row(3).slice(0, 20)}`);
    await waitForRecords(t.redis, t.keys, TAIL, (records) => inboundFrames(records).length === 2);
    const handedOver = await send.input(TAIL, "typed by the user elsewhere");
    await waitForRecords(t.redis, t.keys, TAIL, (records) =>
      records.some((entry) => entry.record.type === "handed_over"),
    );

    await runner.process.kill("SIGKILL");
    // Whatever was acked before the kill is delivered again: the group re-reads the stream from its start.
    await t.redis.xgroup("SETID", t.keys.stream(STREAMS.harnessDispatch.name), GROUP, "0");
    const b = await send.input(CLAUDE, "after the crash");
    // C was claimed by the dead runner but never recorded (so never written): it must be written now.
    const cClaimed = await send.input(CLAUDE, "claimed before the crash");
    await markers.claim(CLAUDE, cClaimed.deliveryId);
    // D was recorded but the runner died before the write could be confirmed: it must never be written.
    const dRecorded = await send.input(CLAUDE, "recorded before the crash");
    await markers.claim(CLAUDE, dRecorded.deliveryId);
    await markers.advance(CLAUDE, dRecorded.deliveryId, "recorded");
    appendFileSync(transcript, `${row(3).slice(20)}\n${row(4)}\n`);

    await restartRunner(runner);

    const records = await waitForRecords(
      t.redis,
      t.keys,
      CLAUDE,
      (all) => inboundFrames(all).filter(isResult).length === 3,
    );
    const lines = loggedInputs(engine).map((line) => JSON.stringify(line));
    for (const id of [a.deliveryId, b.deliveryId, cClaimed.deliveryId])
      expect(lines.filter((line) => line.includes(id))).toHaveLength(1);
    expect(lines.filter((line) => line.includes(dRecorded.deliveryId))).toHaveLength(0);

    const [first, second] = runtimesOf(records);
    const firstRuntime = records.filter((entry) => entry.runtimeId === first);
    expect(firstRuntime[0]?.record.type).toBe("runtime_started");
    // The runtime that died with the runner is closed by the next runner (exit status unknown).
    expect(firstRuntime.at(-1)?.record).toEqual({ type: "runtime_exited", code: null, signal: null });
    const written = (runtimeId: string | undefined) =>
      records.flatMap((entry) =>
        entry.runtimeId === runtimeId && entry.record.type === "outbound"
          ? [entry.record.input?.deliveryId]
          : [],
      );
    expect(written(first)).toEqual([a.deliveryId]);
    expect(written(second)).toEqual([b.deliveryId, cClaimed.deliveryId]);
    expect(runtimesOf(records)).toHaveLength(2);
    expect(seqGapFree(records)).toBe(true);
    const skipped = await fetch(`${runner.url()}/metrics`).then((response) => response.text());
    expect(skipped).toMatch(/engine_runner_dispatch_skipped_total\{agent="claude-kill",reason="written"\} 1/);
    expect(skipped).toMatch(
      /engine_runner_dispatch_skipped_total\{agent="claude-kill",reason="recorded"\} 1/,
    );

    const tail = await waitForRecords(t.redis, t.keys, TAIL, (all) => inboundFrames(all).length >= 4);
    await new Promise((resolve) => setTimeout(resolve, 300));
    const settled = await recordsOf(t.redis, t.keys, TAIL);
    expect(settled).toHaveLength(tail.length);
    expect(runtimesOf(settled)).toHaveLength(1);
    expect(seqGapFree(settled)).toBe(true);
    expect(settled.map((entry) => entry.record.type)).toEqual([
      "runtime_started",
      "inbound",
      "inbound",
      "handed_over",
      "inbound",
      "inbound",
    ]);
    expect(inboundFrames(settled).map((frame) => frame.uuid)).toEqual(["row-1", "row-2", "row-3", "row-4"]);
    expect(settled[3]?.record).toEqual({
      type: "handed_over",
      deliveryId: handedOver.deliveryId,
      deviceId: handedOver.deviceId,
      idempotencyKey: handedOver.idempotencyKey,
      text: "typed by the user elsewhere",
      mode: "native_input",
    });
  });

  it("acks and ignores dispatches for agents it does not host, and reports ready with its agents running", async () => {
    const other = dispatcher(t.redis, t.keys, "another-machine");
    await other.input(CLAUDE, "for another machine");
    await send.input("not-hosted-here", "unknown agent");
    const stream = t.keys.stream(STREAMS.harnessDispatch.name);
    // Only these two entries matter: earlier tests of this file may still hold others of the shared stream.
    const ours = (await t.redis.xrevrange(stream, "+", "-", "COUNT", 2)).map(([id]) => id);
    const pendingOfOurs = async () => {
      const pending = (await t.redis.xpending(stream, GROUP, "-", "+", 1000)) as [string, ...unknown[]][];
      return pending.filter(([id]) => ours.includes(id)).length;
    };
    const deadline = Date.now() + 20_000;
    while ((await pendingOfOurs()) > 0 && Date.now() < deadline) await new Promise((r) => setTimeout(r, 50));
    expect(await pendingOfOurs()).toBe(0);
    const metrics = await fetch(`${runner.url()}/metrics`).then((response) => response.text());
    expect(metrics).toMatch(/engine_runner_dispatch_ignored_total\{reason="other_machine"\} 1/);
    expect(metrics).toMatch(/engine_runner_dispatch_ignored_total\{reason="agent_not_hosted"\} 1/);
    expect(metrics).toMatch(/engine_records_appended_total\{agent="claude-kill",direction="inbound"\} \d+/);
    const ready = await fetch(`${runner.url()}/readyz`);
    expect(ready.status).toBe(200);
  });

  it("refuses a bad AGENTS_FILE at boot with one configuration error (exit 78)", async () => {
    const bad = join(workDir, "bad-agents.json");
    writeFileSync(bad, JSON.stringify([{ agentId: "x", machineId: "m", engine: "codex-app-server" }]));
    const child = spawnSync(process.execPath, ["--import", "tsx", "services/engine-runner/main.ts"], {
      cwd: projectRoot,
      env: { ...process.env, REDIS_URL: t.url, KEY_PREFIX: t.keys.prefix, AGENTS_FILE: bad, PORT: "0" },
      encoding: "utf8",
      timeout: 30_000,
    });
    expect(child.status).toBe(78);
    expect(child.stderr.trim()).toBe(`invalid configuration: AGENTS_FILE: ${bad}: [0.command] required`);
  });
});
