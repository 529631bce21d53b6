import { mkdtempSync, readdirSync, readFileSync, readlinkSync, statSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterEach, describe, expect, it } from "vitest";
import { z } from "zod";
import { freePort } from "../../libs/redis/redis-server-process.js";
import { TsProcess } from "../../test/helpers/child-process.js";
import { waitFor } from "../../test/helpers/test-redis.js";

const SHUTDOWN_TIMEOUT_MS = 10_000;
const lockSchema = z.object({ pid: z.number(), redisPid: z.number() });

const children: TsProcess[] = [];
afterEach(async () => {
  await Promise.all(children.splice(0).map((child) => child.kill("SIGKILL")));
});

interface Stack {
  child: TsProcess;
  port: number;
  dataDir: string;
}

function launch(how: "node" | "npm", env: Record<string, string>): TsProcess {
  const fullEnv = { SHUTDOWN_TIMEOUT_MS: String(SHUTDOWN_TIMEOUT_MS), REDIS_URL: undefined, ...env };
  const child =
    how === "npm"
      ? TsProcess.npmScript("start", fullEnv)
      : new TsProcess("services/all-in-one/main.ts", fullEnv);
  children.push(child);
  return child;
}

async function startStack(how: "node" | "npm"): Promise<Stack> {
  const port = await freePort();
  const dataDir = mkdtempSync(join(tmpdir(), "aio-"));
  const child = launch(how, { PORT: String(port), REDIS_DATA_DIR: dataDir });
  await child.waitForOutput("listening on", 90_000);
  return { child, port, dataDir };
}

/** Every process of one stack: they all carry its data directory in their environment (redis-server: as cwd). */
function stackProcesses(dataDir: string): number[] {
  const marker = `REDIS_DATA_DIR=${dataDir}\0`;
  return readdirSync("/proc")
    .filter((entry) => /^\d+$/.test(entry))
    .filter((pid) => {
      try {
        return (
          readlinkSync(`/proc/${pid}/cwd`) === dataDir ||
          readFileSync(`/proc/${pid}/environ`, "utf8").includes(marker)
        );
      } catch {
        return false; // ended while we looked, or not ours to read
      }
    })
    .map(Number);
}

function redisPidOf(dataDir: string): number {
  return lockSchema.parse(JSON.parse(readFileSync(join(dataDir, "lampline.lock"), "utf8"))).redisPid;
}

async function stopWithin(stop: () => Promise<number | null>): Promise<{ code: number | null; ms: number }> {
  const started = Date.now();
  const code = await stop();
  return { code, ms: Date.now() - started };
}

describe("npm start (all-in-one)", () => {
  it("starts its own Redis (password, 0700 data, one writer) and drains on SIGTERM to node, Redis last", async () => {
    const { child, port, dataDir } = await startStack("node");
    expect(child.log).toContain("started redis-server");
    const base = `http://127.0.0.1:${port}`;
    expect((await fetch(`${base}/healthz`)).status).toBe(200);
    const ready = await waitFor(
      async () => (await (await fetch(`${base}/readyz`)).json()) as { ok?: boolean },
      (report) => report.ok === true,
      { timeoutMs: 20_000, intervalMs: 200 },
    );
    expect(ready).toMatchObject({ ok: true, checks: { redis: true } });
    const metrics = await (await fetch(`${base}/metrics`)).text();
    expect(metrics).toContain("stream_entries_processed_total");
    expect(statSync(dataDir).mode & 0o777).toBe(0o700);
    expect(statSync(join(dataDir, "redis.password")).mode & 0o777).toBe(0o600);
    expect(child.log).not.toContain(readFileSync(join(dataDir, "redis.password"), "utf8").trim());

    const second = launch("node", { PORT: String(await freePort()), REDIS_DATA_DIR: dataDir });
    expect(await second.exit()).toBe(1);
    expect(second.log.trim().split("\n")).toEqual([expect.stringMatching(/is in use by pid \d+/)]);

    const otherDir = mkdtempSync(join(tmpdir(), "aio-"));
    const portTaken = launch("node", { PORT: String(port), REDIS_DATA_DIR: otherDir });
    expect(await portTaken.exit()).toBe(1);
    expect(portTaken.log.trim().split("\n")).toEqual([expect.stringContaining(`port ${port}`)]);
    expect(stackProcesses(otherDir)).toEqual([]);

    const stop = await stopWithin(() => child.kill("SIGTERM"));
    expect(stop.code).toBe(0);
    expect(stop.ms).toBeLessThan(SHUTDOWN_TIMEOUT_MS);
    expect(stackProcesses(dataDir)).toEqual([]);
    expect(child.log).not.toMatch(/MaxRetriesPerRequestError|Unhandled error event/);
  }, 180_000);

  const forms: Array<{ name: string; signal: NodeJS.Signals; to: "npm" | "group" }> = [
    { name: "SIGTERM to npm", signal: "SIGTERM", to: "npm" },
    { name: "SIGTERM to the process group", signal: "SIGTERM", to: "group" },
    { name: "SIGINT to the process group (Ctrl-C)", signal: "SIGINT", to: "group" },
  ];
  it.each(forms)(
    "$name: drains within the deadline, exits 0 and leaves nothing running",
    async (form) => {
      const { child, dataDir } = await startStack("npm");
      const stop = await stopWithin(() =>
        form.to === "npm" ? child.kill(form.signal) : child.signalGroup(form.signal),
      );
      expect(stop.code, child.log.slice(-2_000)).toBe(0);
      expect(stop.ms).toBeLessThan(SHUTDOWN_TIMEOUT_MS);
      expect(child.log).toContain("all-in-one: stopped in");
      expect(stackProcesses(dataDir)).toEqual([]);
      expect(child.log).not.toMatch(/MaxRetriesPerRequestError|Unhandled error event/);
    },
    180_000,
  );

  it("its redis-server exits by itself within seconds when the node process is SIGKILLed", async () => {
    const { child, dataDir } = await startStack("node");
    const redisPid = redisPidOf(dataDir);
    await child.kill("SIGKILL");
    const left = await waitFor(
      () => stackProcesses(dataDir),
      (pids) => pids.length === 0,
      { timeoutMs: 5_000, intervalMs: 100 },
    );
    expect(left).toEqual([]);
    expect(stackProcesses(dataDir)).not.toContain(redisPid);
  }, 180_000);

  it("restarts its redis-server with its data within 5 s after a kill -9, says so in one line, and answers again", async () => {
    const { child, port, dataDir } = await startStack("node");
    const base = `http://127.0.0.1:${port}`;
    const readyz = async () => (await fetch(`${base}/readyz`)).status;
    await waitFor(readyz, (status) => status === 200, { timeoutMs: 20_000, intervalMs: 200 });
    const killed = redisPidOf(dataDir);
    process.kill(killed, "SIGKILL");
    await child.waitForOutput("restarted it at", 5_000);
    expect(redisPidOf(dataDir)).not.toBe(killed);
    expect(await waitFor(readyz, (status) => status === 200, { timeoutMs: 15_000, intervalMs: 200 })).toBe(
      200,
    );
    expect(child.log.split("\n").filter((line) => line.includes("all-in-one: redis-server"))).toHaveLength(1);
    // Answered by the service (no token: 401), not refused for want of Redis (503).
    expect((await fetch(`${base}/v1/runs/r1`)).status).toBe(401);

    expect((await stopWithin(() => child.kill("SIGTERM"))).code).toBe(0);
    expect(stackProcesses(dataDir)).toEqual([]);
  }, 180_000);
});
