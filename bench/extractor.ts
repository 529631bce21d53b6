import { randomBytes } from "node:crypto";
import { setFlagsFromString } from "node:v8";
import { runInNewContext } from "node:vm";
import { Redis } from "ioredis";
import { z } from "zod";
import { countOption } from "./count-option.js";
import { STREAM_CATALOG } from "../libs/contract/catalog.js";
import {
  ENGINE_RECORDS_PER_ENTRY,
  engineRecordEntry,
  type EngineRecord,
} from "../libs/contract/pipeline-payloads.js";
import { AgentKeys } from "../libs/redis/agent-keys.js";
import { Keyspace } from "../libs/redis/keyspace.js";
import { hostServices } from "../libs/service/service-host.js";
import { PAYLOAD_FIELD } from "../libs/streams/stream-writer.js";
import { evidenceExtractorService } from "../services/evidence-extractor/definition.js";
import { applyRecord, initialState } from "../services/evidence-extractor/record-reducer.js";
import type { EvidenceLimits, RuntimeState } from "../services/evidence-extractor/runtime-state.js";
import { readCommandLine } from "../tools/cli-args.js";
import { claudeStreamWorkload, codexRolloutWorkload, type Workload } from "./extractor-workloads.js";

/**
 * `npm run bench -- extractor [--records N] [--service-records N]`: records/s through the pure adapters (one core,
 * no I/O) and through the Redis-backed service (stream consumer, state CAS, bindings, evidence XADD), with memory
 * samples at each quarter of the run to show state stays flat once turns complete.
 */
const LIMITS: EvidenceLimits = {
  maxOpenInputs: 256,
  maxChainRows: 5_000,
  maxOpenTurns: 256,
  clockSkewMs: 2_000,
};
const mib = (bytes: number) => (bytes / 1024 / 1024).toFixed(1);

const HELP = [
  "usage: npm run bench -- extractor [--records N] [--service-records N]",
  "",
  "  --records <n>          records through the pure adapters, per workload (default 120000)",
  "  --service-records <n>  records through the Redis-backed service, per workload (default 100000); REDIS_URL",
  "  -h, --help             this text",
].join("\n");

export async function run(args: string[]): Promise<void> {
  const { records, "service-records": serviceRecords } = readCommandLine(
    {
      name: "bench extractor",
      help: HELP,
      options: { records: { type: "string" }, "service-records": { type: "string" } },
      schema: z.object({ records: countOption(120_000), "service-records": countOption(100_000) }),
    },
    args,
  );
  for (const workload of [claudeStreamWorkload(records), codexRolloutWorkload(records)]) adapterRun(workload);
  for (const workload of [claudeStreamWorkload(serviceRecords), codexRolloutWorkload(serviceRecords)])
    await serviceRun(workload);
  process.stdout.write(`peak RSS of the bench process: ${mib(process.resourceUsage().maxRSS * 1024)} MiB\n`);
}

/** Heap after a full collection, so quarter samples show retained state rather than garbage. */
const collect: () => void = (() => {
  setFlagsFromString("--expose-gc");
  return runInNewContext("gc") as () => void;
})();

function heapMiB(): string {
  collect();
  return mib(process.memoryUsage().heapUsed);
}

/**
 * Records are generated before the clock starts, and one untimed pass warms the JIT first: the figure is the
 * adapters' own steady-state cost, and the heap samples show what the state retains.
 */
function adapterRun(workload: Workload): void {
  const records = [...workload.generate("bench-adapter")];
  const warmUp = initialState(records[0] as EngineRecord);
  for (const record of records) applyRecord(warmUp, record, LIMITS);
  const baseline = heapMiB();
  let state: RuntimeState | undefined;
  let evidence = 0;
  let applied = 0;
  const samples: string[] = [];
  const quarter = Math.floor(workload.records / 4);
  const started = process.hrtime.bigint();
  for (const record of records) {
    state ??= initialState(record);
    evidence += applyRecord(state, record, LIMITS).evidence.length;
    state.appliedSeq = record.seq;
    applied += 1;
    if (applied % quarter === 0)
      samples.push(
        `${mib(process.memoryUsage().heapUsed)} MiB heap / state ${JSON.stringify(state).length} B`,
      );
  }
  const seconds = Number(process.hrtime.bigint() - started) / 1e9;
  process.stdout.write(
    `adapter  ${workload.name.padEnd(18)} ${applied} records in ${seconds.toFixed(2)} s = ` +
      `${Math.round(applied / seconds)} records/s, ${evidence} evidence; heap with records loaded ${baseline} MiB, ` +
      `at 25/50/75/100%: ${samples.join(", ")}\n`,
  );
}

async function serviceRun(workload: Workload): Promise<void> {
  const url = process.env.REDIS_URL ?? "redis://127.0.0.1:6379";
  const prefix = `bench-${randomBytes(3).toString("hex")}`;
  const redis = new Redis(url);
  const agentId = "bench-service";
  const keys = new Keyspace(prefix);
  const streamKey = keys.stream(STREAM_CATALOG.engineRecords.name);
  // Entries as the runner writes them under load: a runtime's consecutive records, up to a full entry each.
  let batch = redis.pipeline();
  let queued = 0;
  let entry: EngineRecord[] = [];
  const flush = () => {
    if (entry.length > 0) batch.xadd(streamKey, "*", PAYLOAD_FIELD, JSON.stringify(engineRecordEntry(entry)));
    entry = [];
  };
  for (const record of workload.generate(agentId)) {
    if (entry.length === ENGINE_RECORDS_PER_ENTRY || (entry[0] && entry[0].runtimeId !== record.runtimeId))
      flush();
    entry.push(record);
    if (++queued % 2_000 === 0) {
      flush();
      await batch.exec();
      batch = redis.pipeline();
    }
  }
  flush();
  await batch.exec();
  const hosted = await hostServices("bench", [evidenceExtractorService], {
    ...process.env,
    REDIS_URL: url,
    KEY_PREFIX: prefix,
    PORT: "0",
    LOG_LEVEL: "silent",
    STREAM_BATCH_SIZE: "256",
  });
  const started = Date.now();
  const runtimeKey = new AgentKeys(keys, agentId).runtime(`${agentId}-rt`);
  for (;;) {
    const seq = Number((await redis.hget(runtimeKey, "seq")) ?? 0);
    if (seq >= workload.records) break;
    await new Promise((resolve) => setTimeout(resolve, 100));
  }
  const seconds = (Date.now() - started) / 1000;
  await hosted.stop();
  const stateBytes = (await redis.hget(runtimeKey, "state"))?.length ?? 0;
  const evidence = await redis.xlen(keys.stream(STREAM_CATALOG.harnessEvidence.name));
  process.stdout.write(
    `service  ${workload.name.padEnd(18)} ${workload.records} records in ${seconds.toFixed(1)} s = ` +
      `${Math.round(workload.records / seconds)} records/s, ${evidence} evidence, final state ${stateBytes} B\n`,
  );
  let cursor = "0";
  do {
    const [next, keys] = await redis.scan(cursor, "MATCH", `${prefix}:*`, "COUNT", 1000);
    cursor = next;
    if (keys.length > 0) await redis.del(...keys);
  } while (cursor !== "0");
  await redis.quit();
}
