import { waitFor } from "../../test/helpers/test-redis.js";
import type { BenchLamp } from "../e2e/bench-lamp.js";
import { LamplineStack, BENCH_MACHINE, benchAgents } from "../e2e/lampline-stack.js";
import { LoadGenerator, type LoadFigures } from "../e2e/load-generator.js";
import { warmUpOf } from "../e2e/lampline-run.js";
import type { FleetBenchArgs } from "./cli.js";
import { connectLamps } from "./fleet-lamps-pool.js";
import type { FleetRedis } from "./fleet-redis.js";
import { takeSnapshot, type FleetSnapshot, type SnapshotSources } from "./fleet-snapshot.js";
import { routerLeaseFigures, scrape, seriesValue } from "./service-metrics.js";

export interface FleetRun {
  activeLamps: number;
  snapshots: FleetSnapshot[];
  loads: { devices: number; figures: LoadFigures }[];
  /** How long connecting each fleet took, until every router held a session for every Lamp. */
  connectSeconds: Record<string, number>;
  /** How long the routers took to let the idle Lamps' sessions go after they disconnected (null: not in time). */
  releaseSeconds: number | null;
  /** Sessions the routers still held for gone Lamps when the bench stopped waiting (0 when all were let go). */
  sessionsLeftAfterRelease: number;
}

const DRAIN_MS = 20_000;
const SETTLE_TIMEOUT_MS = 240_000;

/**
 * The fleet bench on one stack: the small fleet connected and loaded, then the large one (the small one plus the
 * rest) connected and loaded with the same active Lamps, then the idle Lamps gone. A snapshot after each step.
 */
export async function runFleet(
  args: FleetBenchArgs,
  target: { redis: FleetRedis; env: Record<string, string>; workDir: string },
  log: (line: string) => void,
): Promise<FleetRun> {
  const agents = benchAgents(8, 4);
  log(
    `starting the services (${args.routers} router(s), ${args.replicas} replica(s) per consumer group, ` +
      `${args.partitions} partition(s))`,
  );
  const stack = await LamplineStack.start({
    mode: "split",
    redisUrl: target.env.REDIS_URL ?? "redis://127.0.0.1:6379",
    keyPrefix: "bench-fleet",
    workDir: target.workDir,
    agents,
    env: { STREAM_PARTITIONS: String(args.partitions), ...target.env },
    replicas: {
      router: args.routers,
      "evidence-extractor": args.replicas,
      "result-producer": args.replicas,
      "run-resolver": args.replicas,
      "tts-dispatcher": args.replicas,
    },
  });
  const routerNames = ["router", ...Array.from({ length: args.routers - 1 }, (_, n) => `router#${n + 2}`)];
  const sources: SnapshotSources = {
    redis: target.redis,
    services: () => stack.pids().services,
    routers: new Map(routerNames.map((name) => [name, stack.httpUrl(name)])),
  };
  const generator = new LoadGenerator(agents, BENCH_MACHINE);
  const events = {
    onPlayback: generator.onPlayback.bind(generator),
    onRequestError: generator.onRequestError.bind(generator),
  };
  const lamps: BenchLamp[] = [];
  const activeLamps = Math.max(1, Math.round(args.lamps * args["active-share"]));
  const run: FleetRun = {
    activeLamps,
    snapshots: [],
    loads: [],
    connectSeconds: {},
    releaseSeconds: null,
    sessionsLeftAfterRelease: 0,
  };
  const snapshot = async (phase: string, idleWindow: boolean) => {
    const taken = await takeSnapshot(sources, phase, lamps.length, { idleWindow });
    run.snapshots.push(taken);
    log(`${phase}: ${taken.redisClients.total} Redis clients, ${taken.devices} Lamps`);
  };
  const sessions = async () => {
    let sum = 0;
    for (const url of sources.routers.values()) sum += (await routerLeaseFigures(url)).sessions;
    return sum;
  };
  const untilSessions = async (expected: number, what: string) => {
    const seen = await waitFor(sessions, (held) => held === expected, {
      timeoutMs: SETTLE_TIMEOUT_MS,
      intervalMs: 500,
    });
    if (seen !== expected) throw new Error(`${what}: routers hold ${seen} sessions, expected ${expected}`);
  };
  const connectUpTo = async (count: number) => {
    const startedAt = performance.now();
    log(`connecting Lamps ${lamps.length + 1}…${count}`);
    lamps.push(...(await connectLamps(stack.lampUrl, lamps.length, count, events)));
    await untilSessions(count, `${count} Lamps connected`);
    const sockets = seriesValue(await scrape(stack.httpUrl("device-gateway")), "os_lamp_sockets");
    if (sockets !== count)
      throw new Error(`device-gateway counts ${sockets} Lamp sockets, expected ${count}`);
    run.connectSeconds[String(count)] = Math.round(performance.now() - startedAt) / 1000;
  };
  const offer = async () => {
    log(`${lamps.length} Lamps: offering ${args.rate} results/s for ${args.seconds} s`);
    const figures = await generator.offer(args.rate, args.seconds, warmUpOf(args.seconds), DRAIN_MS);
    run.loads.push({ devices: lamps.length, figures });
    log(
      `  sustained ${figures.sustainedPerSecond}/s, p99 ${figures.requestToPlayback.p99} ms, lost ${figures.lost}`,
    );
  };
  try {
    const all = await waitFor(
      async () => {
        let held = 0;
        for (const url of sources.routers.values()) held += (await routerLeaseFigures(url)).partitions;
        return held;
      },
      (held) => held === args.partitions,
      { timeoutMs: 60_000, intervalMs: 250 },
    );
    if (all !== args.partitions) throw new Error(`routers hold ${all} of ${args.partitions} partitions`);
    await snapshot("no Lamps", true);

    await connectUpTo(args["baseline-lamps"]);
    generator.attach(lamps.slice(0, Math.min(activeLamps, lamps.length)));
    log("warming up (engines start on first input)");
    await generator.offer(5, 3, 0, 60_000);
    await snapshot(`${args["baseline-lamps"]} Lamps idle`, true);
    await offer();

    await connectUpTo(args.lamps);
    generator.attach(lamps.slice(0, activeLamps));
    await snapshot(`${args.lamps} Lamps idle`, true);
    await offer();
    await snapshot(`${args.lamps} Lamps after load`, false);

    log(`disconnecting the ${args.lamps - activeLamps} idle Lamps`);
    const releaseStartedAt = performance.now();
    for (const lamp of lamps.splice(activeLamps)) lamp.close();
    // A slow release is a figure, not a failure: the report says how many sessions were still held.
    const held = await waitFor(sessions, (count) => count === activeLamps, {
      timeoutMs: SETTLE_TIMEOUT_MS,
      intervalMs: 500,
    });
    run.sessionsLeftAfterRelease = held - activeLamps;
    if (held === activeLamps) run.releaseSeconds = Math.round(performance.now() - releaseStartedAt) / 1000;
    else
      log(
        `after ${SETTLE_TIMEOUT_MS / 1000} s the routers still hold ${held - activeLamps} gone Lamps' sessions`,
      );
    await snapshot(`idle Lamps gone (${activeLamps} left)`, true);
    return run;
  } finally {
    for (const lamp of lamps) lamp.close();
    await stack.stop();
  }
}
