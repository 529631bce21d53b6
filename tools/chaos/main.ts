import { writeFileSync } from "node:fs";
import { constants } from "node:os";
import { join } from "node:path";
import { parseArgs } from "node:util";
import { z } from "zod";
import { runCampaign } from "./campaign.js";
import { formatReport } from "./report.js";

/**
 * `npm run chaos -- --results N --seed S [--results-per-fault K] [--agent-replicas R] [--cancel-share P]
 *  [--outages O] [--outage-ms MS] [--voice-target-ttl-ms MS] [--run-deadline-grace-ms MS] [--drain-max-ms MS]
 *  [--json FILE] [--out DIR]`  (DIR keeps the service logs, received playbacks and run.update feeds; default
 *  .tmp/chaos/<seed>-<N>)
 * Exit 0 when every invariant holds, 1 when one fails, 2 on bad arguments or when the campaign itself broke.
 */
const argsSchema = z.object({
  results: z.coerce.number().int().min(1).max(100_000).default(200),
  seed: z.string().min(1).default("lampline"),
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

async function main(): Promise<number> {
  const { values } = parseArgs({
    options: {
      results: { type: "string" },
      seed: { type: "string" },
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
    strict: true,
  });
  const args = argsSchema.safeParse(values);
  if (!args.success) {
    console.error(`chaos: ${args.error.issues.map((i) => `--${i.path.join(".")}: ${i.message}`).join("; ")}`);
    return 2;
  }
  const outcome = await runCampaign({
    seed: args.data.seed,
    results: args.data.results,
    resultsPerFault: args.data["results-per-fault"],
    drainMaxMs: args.data["drain-max-ms"],
    agentReplicas: args.data["agent-replicas"] ?? (args.data.results < 300 ? 1 : 3),
    cancelShare: args.data["cancel-share"],
    outages: args.data.outages ?? Math.max(1, Math.round(args.data.results / 500)),
    outageMs: args.data["outage-ms"],
    voiceTargetTtlMs: args.data["voice-target-ttl-ms"],
    runDeadlineGraceMs: args.data["run-deadline-grace-ms"],
    artifactsDir: args.data.out ?? join(".tmp", "chaos", `${args.data.seed}-${args.data.results}`),
    log: (line) => console.error(`[chaos ${new Date().toISOString()}] ${line}`),
  });
  console.log(formatReport(outcome));
  if (args.data.json) writeFileSync(args.data.json, JSON.stringify(outcome, null, 2));
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
