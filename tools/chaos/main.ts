import { writeFileSync } from "node:fs";
import { constants } from "node:os";
import { join } from "node:path";
import { z } from "zod";
import { runCampaign } from "./campaign.js";
import { formatReport } from "./report.js";
import { readCommandLine } from "../cli-args.js";
import { CLUSTER_MASTERS, clusterStackReplicas } from "../../test/cluster/cluster-profile.js";

/**
 * `npm run chaos -- --results N --seed S [--cluster] [--results-per-fault K] [--agent-replicas R] [--cancel-share P]
 *  [--outages O] [--outage-ms MS] [--voice-target-ttl-ms MS] [--run-deadline-grace-ms MS] [--drain-max-ms MS]
 *  [--json FILE] [--out DIR]`  (DIR keeps the service logs, received playbacks and run.update feeds; default
 *  .tmp/chaos/<seed>-<N>)
 * Exit 0 when every invariant holds, 1 when one fails, 2 when the campaign itself broke, 64 on a bad argument.
 */
const argsSchema = z.object({
  results: z.coerce.number().int().min(1).max(100_000).default(200),
  seed: z.string().min(1).default("lampline"),
  cluster: z.boolean().default(false),
  "results-per-fault": z.coerce.number().int().min(1).default(12),
  "drain-max-ms": z.coerce.number().int().min(1_000).default(180_000),
  "cancel-share": z.coerce.number().min(0).max(1).default(0.1),
  /** Long Lamp outages; by default one per 500 results (at least one). */
  outages: z.coerce.number().int().min(0).max(1_000).optional(),
  "outage-ms": z.coerce.number().int().min(1_000).default(65_000),
  "voice-target-ttl-ms": z.coerce.number().int().min(1_000).default(90_000),
  "run-deadline-grace-ms": z.coerce.number().int().min(0).default(15_000),
  /** Engines per agent kind; by default 1 below 300 results, else 3 (more turns in flight). */
  "agent-replicas": z.coerce.number().int().min(1).max(10).optional(),
  json: z.string().min(1).optional(),
  out: z.string().min(1).optional(),
});

const HELP = [
  "usage: npm run chaos -- [--results N] [--seed S] [options]",
  "",
  "The fault campaign: the whole stack as separate processes, engine-sim agents and chaos Lamps, with faults injected",
  "(SIGKILLs, Redis restarts, Lamp outages); then every invariant is checked on the recorded history.",
  "",
  "  --cluster                     run on a private three-master Redis Cluster with two replicas of every",
  "                                consumer-group service, the router and the device-gateway, three partitions;",
  "                                kills hit either replica and the Redis fault restarts one cluster node",
  "  --results <n>                 engine results to produce (default 200)",
  "  --seed <s>                    PRNG seed: the same seed plans the same campaign (default lampline)",
  "  --results-per-fault <n>       results between injected faults (default 12)",
  "  --agent-replicas <n>          engines per agent kind (default 1 below 300 results, else 3)",
  "  --cancel-share <0..1>         share of requests the Lamp cancels (default 0.1)",
  "  --outages <n>                 long Lamp outages (default one per 500 results)",
  "  --outage-ms <ms>              length of a long outage (default 65000)",
  "  --voice-target-ttl-ms <ms>    voice target lifetime (default 90000)",
  "  --run-deadline-grace-ms <ms>  RUN_DEADLINE_GRACE_MS of the stack (default 15000)",
  "  --drain-max-ms <ms>           how long to wait for every run to end (default 180000)",
  "  --json <file>                 write the outcome as JSON",
  "  --out <dir>                   service logs, playbacks, run.update feeds (default .tmp/chaos/<seed>-<N>)",
  "  -h, --help                    this text",
  "",
  "Exit: 0 when every invariant holds, 1 when one fails, 2 when the campaign broke, 64 on a bad argument.",
].join("\n");

async function main(): Promise<number> {
  const args = readCommandLine({
    name: "chaos",
    help: HELP,
    options: {
      results: { type: "string" },
      seed: { type: "string" },
      cluster: { type: "boolean" },
      "results-per-fault": { type: "string" },
      "drain-max-ms": { type: "string" },
      "agent-replicas": { type: "string" },
      "cancel-share": { type: "string" },
      outages: { type: "string" },
      "outage-ms": { type: "string" },
      "voice-target-ttl-ms": { type: "string" },
      "run-deadline-grace-ms": { type: "string" },
      json: { type: "string" },
      out: { type: "string" },
    },
    schema: argsSchema,
  });
  const outcome = await runCampaign({
    seed: args.seed,
    results: args.results,
    resultsPerFault: args["results-per-fault"],
    drainMaxMs: args["drain-max-ms"],
    agentReplicas: args["agent-replicas"] ?? (args.results < 300 ? 1 : 3),
    cancelShare: args["cancel-share"],
    outages: args.outages ?? Math.max(1, Math.round(args.results / 500)),
    outageMs: args["outage-ms"],
    voiceTargetTtlMs: args["voice-target-ttl-ms"],
    runDeadlineGraceMs: args["run-deadline-grace-ms"],
    deployment: args.cluster
      ? { clusterMasters: CLUSTER_MASTERS, replicas: clusterStackReplicas }
      : { replicas: {} },
    artifactsDir:
      args.out ?? join(".tmp", "chaos", `${args.seed}-${args.results}${args.cluster ? "-cluster" : ""}`),
    log: (line) => console.error(`[chaos ${new Date().toISOString()}] ${line}`),
  });
  console.log(formatReport(outcome));
  if (args.json) writeFileSync(args.json, JSON.stringify(outcome, null, 2));
  return outcome.verdict.violations.length === 0 ? 0 : 1;
}

// Stopped by Ctrl-C or a timeout: exiting takes the stack's services, engines and redis-server with it (each is
// spawned with spawnOwned), instead of leaving them running without their campaign.
for (const signal of ["SIGINT", "SIGTERM", "SIGHUP"] as const)
  process.once(signal, () => {
    console.error(`chaos: ${signal}; stopping the stack`);
    process.exit(128 + constants.signals[signal]);
  });

main().then(
  (code) => process.exit(code),
  (error: unknown) => {
    console.error(
      `chaos: campaign failed: ${error instanceof Error ? (error.stack ?? error.message) : String(error)}`,
    );
    process.exit(2);
  },
);
