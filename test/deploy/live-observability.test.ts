import { execFileSync, spawnSync } from "node:child_process";
import { mkdtempSync, readFileSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { parse, stringify } from "yaml";
import { z } from "zod";
import { Redis } from "ioredis";
import { freePort, RedisServerProcess } from "../../libs/redis/redis-server-process.js";
import { DASHBOARDS } from "../../tools/deploy/grafana/panels.js";
import { projectRoot, TsProcess } from "../helpers/child-process.js";
import { waitFor } from "../helpers/test-redis.js";
import { E2EStack, MACHINE, SERVICE_NAMES } from "../e2e/stack.js";

/**
 * The shipped Prometheus config and rules and the shipped Alertmanager config, run by Debian's `prometheus` and
 * `prometheus-alertmanager` (installed by .ci/run) against the nine services as their own processes, and
 * Debian's `prometheus-redis-exporter` in front of a Redis of its own (the memory alert changes its maxmemory).
 */
const tools = ["prometheus", "promtool", "prometheus-alertmanager", "prometheus-redis-exporter"];
const missing = tools.filter((tool) => spawnSync("sh", ["-c", `command -v ${tool}`]).status !== 0);
if (missing.length > 0)
  process.stderr.write(
    `live observability test skipped: ${missing.join(", ")} not installed (.ci/run installs them)\n`,
  );

const PROMETHEUS_CONFIG = join(projectRoot, "deploy", "prometheus", "prometheus.yml");
const RULES = join(projectRoot, "deploy", "prometheus", "alerts.yml");
const ALERTMANAGER_CONFIG = join(projectRoot, "deploy", "alertmanager", "alertmanager.yml");

const queryAnswer = z.object({
  status: z.string(),
  data: z.object({ result: z.array(z.object({ metric: z.record(z.string(), z.string()) })) }),
});
const rulesFile = z.object({
  groups: z.array(z.object({ rules: z.array(z.object({ alert: z.string(), expr: z.string() })) })),
});
const alertsSchema = z.array(z.object({ labels: z.record(z.string(), z.string()) }));

/** The shipped rules with the Redis memory alert firing at once instead of after 5 minutes, in `dir`. */
function promptRules(dir: string): string {
  const rules = parse(readFileSync(RULES, "utf8"));
  for (const group of rules.groups)
    for (const rule of group.rules) if (rule.alert === "LamplineRedisMemoryNearLimit") rule.for = "0s";
  const file = join(dir, "alerts.yml");
  writeFileSync(file, stringify(rules));
  return file;
}

describe.skipIf(missing.length > 0)("live Prometheus and Alertmanager with the shipped configuration", () => {
  let stack: E2EStack;
  let prometheus: TsProcess;
  let alertmanager: TsProcess;
  let exporter: TsProcess;
  let memoryRedis: RedisServerProcess;
  let promUrl = "";
  let amUrl = "";

  const query = async (expr: string) => {
    const response = await fetch(`${promUrl}/api/v1/query?query=${encodeURIComponent(expr)}`);
    return queryAnswer.parse(await response.json());
  };

  beforeAll(async () => {
    stack = await E2EStack.start({
      label: "observe",
      agents: [
        { agentId: "claude", protocol: "claude-stream-json", scenario: "claude-answer-each-input" },
        { agentId: "codex-failing", protocol: "codex-app-server", scenario: "codex-failed-turn" },
      ],
    });
    const dir = mkdtempSync(join(tmpdir(), "observe-"));
    const [promPort, amPort, exporterPort] = [await freePort(), await freePort(), await freePort()];
    promUrl = `http://127.0.0.1:${promPort}`;
    amUrl = `http://127.0.0.1:${amPort}`;
    memoryRedis = await RedisServerProcess.start({ appendonly: false });
    exporter = new TsProcess(
      "redis-exporter",
      {},
      [],
      [
        "prometheus-redis-exporter",
        [`-redis.addr=${memoryRedis.url}`, `-web.listen-address=127.0.0.1:${exporterPort}`],
      ],
    );
    const targetsOf: Record<string, string[]> = {
      lampline: SERVICE_NAMES.map((name) => stack.url(name).replace("http://", "")),
      redis: [`127.0.0.1:${exporterPort}`],
    };
    const shipped = parse(readFileSync(PROMETHEUS_CONFIG, "utf8"));
    const config = {
      ...shipped,
      global: { scrape_interval: "1s", evaluation_interval: "1s" },
      rule_files: [promptRules(dir)],
      alerting: { alertmanagers: [{ static_configs: [{ targets: [`127.0.0.1:${amPort}`] }] }] },
      scrape_configs: shipped.scrape_configs.map((job: { job_name: string }) => ({
        ...job,
        static_configs: [{ targets: targetsOf[job.job_name] }],
      })),
    };
    const configFile = join(dir, "prometheus.yml");
    writeFileSync(configFile, stringify(config));
    alertmanager = new TsProcess(
      "alertmanager",
      {},
      [],
      [
        "prometheus-alertmanager",
        [
          `--config.file=${ALERTMANAGER_CONFIG}`,
          `--storage.path=${join(dir, "am")}`,
          `--web.listen-address=127.0.0.1:${amPort}`,
          "--cluster.listen-address=",
        ],
      ],
    );
    prometheus = new TsProcess(
      "prometheus",
      {},
      [],
      [
        "prometheus",
        [
          `--config.file=${configFile}`,
          `--storage.tsdb.path=${join(dir, "tsdb")}`,
          `--web.listen-address=127.0.0.1:${promPort}`,
        ],
      ],
    );
    await waitFor(
      async () => (await query('count(up{job="lampline"} == 1)').catch(() => undefined))?.data.result.length,
      (count) => count === 1,
      { timeoutMs: 30_000 },
    );
  }, 120_000);

  afterAll(async () => {
    await prometheus?.kill("SIGKILL");
    await alertmanager?.kill("SIGKILL");
    await exporter?.kill("SIGKILL");
    await memoryRedis?.stop();
    await stack?.stop();
  });

  it("promtool accepts the shipped config and rules", () => {
    expect(execFileSync("promtool", ["check", "config", PROMETHEUS_CONFIG], { encoding: "utf8" })).toContain(
      "SUCCESS",
    );
    expect(execFileSync("promtool", ["check", "rules", RULES], { encoding: "utf8" })).toContain(
      "SUCCESS: 9 rules found",
    );
  });

  it("after an answer, a failed turn, a suppressed and an uncertain playback, every panel query returns data", async () => {
    const lamp = await stack.lamp("lamp-ok");
    await lamp.say({ agentId: "claude", machineId: MACHINE, text: "Paint the house red" });
    await lamp.say({ agentId: "codex-failing", machineId: MACHINE, text: "Break something" });
    await lamp.say({ agentId: "claude", machineId: MACHINE, text: "Show it only", replyRoute: "display" });
    const silent = await stack.lamp("lamp-silent", { ack: false });
    await silent.say({ agentId: "claude", machineId: MACHINE, text: "Nobody acks this" });
    await waitFor(
      async () => (await query('sum(tts_playback_transitions_total{state="uncertain"})')).data.result,
      (result) => result.length === 1,
      { timeoutMs: 30_000 },
    );
    const measured = await waitFor(
      async () => (await query("sum(lampline_completion_to_playback_start_seconds_count) > 0")).data.result,
      (result) => result.length === 1,
      { timeoutMs: 15_000 },
    );
    expect(measured).toHaveLength(1);
    const empty: string[] = [];
    for (const dashboard of DASHBOARDS)
      for (const panel of dashboard.panels) {
        const answer = await waitFor(
          () => query(panel.expr.split("$__rate_interval").join("1m")),
          (result) => result.data.result.length > 0,
          { timeoutMs: 15_000 },
        );
        if (answer.data.result.length === 0) empty.push(`${dashboard.uid}: ${panel.title}`);
      }
    expect(empty).toEqual([]);
  }, 120_000);

  it("every alert expression parses and evaluates in Prometheus", async () => {
    const rules = rulesFile.parse(parse(readFileSync(RULES, "utf8")));
    for (const rule of rules.groups.flatMap((group) => group.rules))
      expect((await query(rule.expr)).status, rule.alert).toBe("success");
  });

  it("stopping one service makes LamplineServiceDown reach Alertmanager", async () => {
    await stack.kill("run-resolver");
    const alerts = await waitFor(
      async () => alertsSchema.parse(await (await fetch(`${amUrl}/api/v2/alerts`)).json()),
      (list) => list.some((alert) => alert.labels.alertname === "LamplineServiceDown"),
      { timeoutMs: 90_000, intervalMs: 500 },
    );
    const down = alerts.find((alert) => alert.labels.alertname === "LamplineServiceDown");
    expect(down?.labels.instance).toBe(stack.url("run-resolver").replace("http://", ""));
  }, 120_000);

  it("the Redis exporter's memory series reach Prometheus, and Redis near maxmemory fires LamplineRedisMemoryNearLimit", async () => {
    const series = await waitFor(
      async () => (await query("redis_memory_used_bytes and on() redis_memory_max_bytes")).data.result,
      (result) => result.length === 1,
      { timeoutMs: 30_000 },
    );
    expect(series).toHaveLength(1);
    const redis = new Redis(memoryRedis.url);
    const used = Number(/used_memory:(\d+)/.exec(await redis.info("memory"))?.[1]);
    // Used memory at 95% of the limit: noeviction keeps it there, above the alert's 85%.
    await redis.config("SET", "maxmemory", String(Math.ceil(used / 0.95)));
    await redis.quit();
    const alerts = await waitFor(
      async () => alertsSchema.parse(await (await fetch(`${amUrl}/api/v2/alerts`)).json()),
      (list) => list.some((alert) => alert.labels.alertname === "LamplineRedisMemoryNearLimit"),
      { timeoutMs: 60_000, intervalMs: 500 },
    );
    expect(alerts.map((alert) => alert.labels.alertname)).toContain("LamplineRedisMemoryNearLimit");
  }, 90_000);
});
