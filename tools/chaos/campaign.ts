import { mkdirSync, rmSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { RedisClusterProcess } from "../../libs/redis/redis-cluster-process.js";
import { RedisServerProcess } from "../../libs/redis/redis-server-process.js";
import { CLUSTER_PARTITIONS } from "../../test/cluster/cluster-profile.js";
import { E2EStack, type StackProfile } from "../../test/e2e/stack.js";
import { planCampaign, type CampaignPlan, type PlanOptions } from "./campaign-plan.js";
import { ChaosLamp } from "./chaos-lamp.js";
import { drain, type DrainOutcome } from "./drain.js";
import {
  FaultController,
  type AppliedFault,
  type CampaignRedis,
  type UnplannedExit,
} from "./fault-controller.js";
import { readHistory } from "./history.js";
import { checkHistory, type CampaignVerdict } from "./invariants.js";
import { RoutingTap } from "./routing-tap.js";
import { TrafficGenerator, TrafficProgress, type TrafficFigures } from "./traffic.js";

export interface CampaignOptions extends PlanOptions {
  /** Upper bound of the wait for the system to settle after the faults stopped. */
  drainMaxMs: number;
  log: (line: string) => void;
  /**
   * Where to keep the service logs, every received playback.start and every Lamp's run.update feed for a
   * post-mortem (none when absent).
   */
  artifactsDir?: string;
}

export interface CampaignOutcome {
  plan: CampaignPlan;
  traffic: TrafficFigures;
  faults: AppliedFault[];
  unplannedExits: UnplannedExit[];
  drain: DrainOutcome;
  verdict: CampaignVerdict;
  durationMs: number;
}

/**
 * Tight timings so recovery happens within seconds: a killed tts worker's job is re-run after 5 s, unsent
 * reservations are swept after 2 s, a playback waiting for its Lamp rechecks every 5 s, and the per-connection rate
 * limit is out of the way (faults are the subject). The run deadline grace comes from the plan.
 */
const CHAOS_ENV: Record<string, string> = {
  PLAYBACK_OFFLINE_RECHECK_MS: "5000",
  PLAYBACK_LOCK_DURATION_MS: "5000",
  PLAYBACK_STALLED_INTERVAL_MS: "2500",
  DISPATCH_SWEEP_MIN_AGE_MS: "2000",
  DISPATCH_SWEEP_INTERVAL_MS: "1000",
  RATE_LIMIT_PER_SECOND: "200",
  RATE_LIMIT_BURST: "400",
  MAX_IN_FLIGHT: "64",
};

/**
 * The fault campaign: every service its own process on a private redis-server (AOF, fsync always) or, with
 * `deployment.clusterMasters`, on a private Redis Cluster (every node AOF, fsync always) with the deployment's
 * replicas and CLUSTER_PARTITIONS partitions; seeded voice
 * traffic from several Lamps to Claude and Codex engine-sim agents (some runs cancelled) while the fault schedule
 * kills and restarts services and Redis and disturbs the Lamps (short drops, long outages, lost acks); then the faults stop, the system drains, and the whole history is
 * checked against the invariants.
 */
export async function runCampaign(options: CampaignOptions): Promise<CampaignOutcome> {
  const started = Date.now();
  const plan = planCampaign(options);
  options.log(
    `seed ${plan.seed}: ${plan.turns.length} turns for ${plan.results} results, ${plan.devices.length} lamps, ` +
      `${plan.agents.length} agents, ${plan.faults.length} faults, ` +
      `${plan.turns.filter((turn) => turn.cancel).length} cancels`,
  );
  const redis = await startRedis(plan.deployment.clusterMasters);
  let stack: E2EStack | undefined;
  const lamps = new Map<string, ChaosLamp>();
  let faults: FaultController | undefined;
  let routingTap: RoutingTap | undefined;
  try {
    stack = await E2EStack.start({
      label: "chaos",
      ...stackProfile(redis, plan),
      agents: plan.agents.map(({ agentId, protocol, scenario }) => ({
        agentId,
        protocol,
        scenario,
        advanceRuntimes: false,
      })),
      env: { ...CHAOS_ENV, RUN_DEADLINE_GRACE_MS: String(plan.deadlines.graceMs) },
      // 21 engines and eight services starting at once on two cores, with other suites running beside them.
      startTimeoutMs: 180_000,
    });
    const running = stack;
    // Each Lamp starts on its own device-gateway in turn and moves to another when its gateway refuses it.
    const gateways = Array.from({ length: plan.deployment.replicas["device-gateway"] ?? 1 }, (_, replica) =>
      running.lampUrlOf(replica),
    );
    plan.devices.forEach((deviceId, index) => {
      const urls = [
        ...gateways.slice(index % gateways.length),
        ...gateways.slice(0, index % gateways.length),
      ];
      lamps.set(deviceId, new ChaosLamp(deviceId, urls, () => running.token(deviceId)));
    });
    await Promise.all([...lamps.values()].map((lamp) => lamp.start()));
    options.log("stack and lamps up; traffic and faults start");

    routingTap = new RoutingTap(running.redis, running.keys, options.log);
    routingTap.start();
    const progress = new TrafficProgress();
    faults = new FaultController(running, redis, lamps, progress, options.log);
    const traffic = new TrafficGenerator(plan, lamps, running.redis, running.keys, progress);
    const [trafficRun, faultRun] = await Promise.allSettled([
      traffic.run().finally(() => progress.finish()),
      faults.run(plan.faults),
    ]);
    if (faultRun.status === "rejected") throw faultRun.reason;
    if (trafficRun.status === "rejected") throw trafficRun.reason;
    options.log(`traffic done (${trafficRun.value.inputs.length} inputs); faults stopped; draining`);

    for (const lamp of lamps.values()) lamp.setAckPolicy({ mode: "prompt" });
    await running.waitUntilReady();
    const drained = await drain(running.redis, running.keys, [...lamps.values()], {
      quietMs: 6_000,
      maxMs: options.drainMaxMs,
      devices: plan.devices,
      deadlines: plan.deadlines,
    });
    options.log(`drained in ${drained.drainedMs} ms (quiet: ${drained.quiet}); checking the history`);
    const history = await readHistory(running, plan, lamps, await routingTap.stop());
    return {
      plan,
      traffic: trafficRun.value,
      faults: faults.applied,
      unplannedExits: faults.unplannedExits,
      drain: drained,
      verdict: checkHistory(history, trafficRun.value, plan.deadlines),
      durationMs: Date.now() - started,
    };
  } finally {
    faults?.stopSupervising();
    await routingTap?.stop();
    if (stack && options.artifactsDir) keepArtifacts(options.artifactsDir, stack, lamps);
    for (const lamp of lamps.values()) lamp.stop();
    await stack?.stop();
    for (const server of redisServers(redis)) {
      await server.stop();
      rmSync(server.dir, { recursive: true, force: true });
    }
    if (stack) rmSync(stack.workDir, { recursive: true, force: true });
  }
}

function keepArtifacts(dir: string, stack: E2EStack, lamps: Map<string, ChaosLamp>): void {
  mkdirSync(join(dir, "services"), { recursive: true });
  for (const [name, replica] of stack.instances())
    writeFileSync(
      join(dir, "services", `${name}${replica === 0 ? "" : `-${replica}`}.log`),
      stack.process(name, replica).log,
    );
  const received = [...lamps.values()].flatMap((lamp) => lamp.received);
  writeFileSync(join(dir, "playbacks-received.ndjson"), received.map((p) => JSON.stringify(p)).join("\n"));
  const feeds = [...lamps.values()].flatMap((lamp) =>
    lamp.feed.map((event) => JSON.stringify({ deviceId: lamp.deviceId, ...event })),
  );
  writeFileSync(join(dir, "run-updates-received.ndjson"), feeds.join("\n"));
}

async function startRedis(clusterMasters: number | undefined): Promise<CampaignRedis> {
  if (clusterMasters === undefined)
    return {
      kind: "server",
      server: await RedisServerProcess.start({ appendonly: true, appendfsync: "always" }),
    };
  return {
    kind: "cluster",
    cluster: await RedisClusterProcess.start({ masters: clusterMasters, appendfsync: "always" }),
  };
}

/** Where the stack runs: the redis-server, or the cluster with the plan's replicas and CLUSTER_PARTITIONS. */
function stackProfile(redis: CampaignRedis, plan: CampaignPlan): StackProfile & { redisUrl?: string } {
  if (redis.kind === "server") return { redisUrl: redis.server.url, replicas: plan.deployment.replicas };
  return {
    redisClusterNodes: redis.cluster.nodes,
    partitions: CLUSTER_PARTITIONS,
    replicas: plan.deployment.replicas,
  };
}

function redisServers(redis: CampaignRedis): readonly RedisServerProcess[] {
  return redis.kind === "server" ? [redis.server] : redis.cluster.servers;
}
