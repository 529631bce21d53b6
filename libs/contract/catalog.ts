import type { z } from "zod";
import { baseEnvSchema } from "../config/env-fields.js";
import { deviceCommandSchema, sendReplySchema } from "./device-commands.js";
import { RUN_UPDATES_KEPT, runUpdateRecordSchema } from "./run-update.js";
import { protocolErrorRecordSchema, rejectionRecordSchema } from "./os-audit-records.js";
import { consumerSettingsOf, STREAM_CONSUMER_ENV } from "../config/consumer-settings.js";
import { lampDeliverySchema, lampEventSchema, playbackJobSchema } from "./lamp-payloads.js";
import {
  engineRecordEntrySchema,
  harnessDispatchSchema,
  harnessEvidenceSchema,
  osResolvedSchema,
  osRoutedSchema,
} from "./pipeline-payloads.js";

/**
 * The catalog of what flows where: every stream with its payload schema, producers, consumer groups, dead letters
 * and retry settings, and the BullMQ queue with its job schema. Producers and consumers take stream and group
 * names from here, and the table in docs/architecture.md "Streams" is rendered from it (`npm run docs:catalog`).
 */

export type ServiceName =
  | "harness-gateway"
  | "engine-runner"
  | "evidence-extractor"
  | "result-producer"
  | "device-gateway"
  | "router"
  | "run-resolver"
  | "tts-dispatcher"
  | "console";

export interface ConsumerGroup {
  group: string;
  service: ServiceName;
}

/** Something that exists once per instance (a gateway, a machine): call it with that instance's id. */
export type PerInstance<T> = ((instanceId: string) => T) & { readonly instance: string };

function perInstance<T>(instance: string, of: (instanceId: string) => T): PerInstance<T> {
  return Object.assign(of, { instance });
}

/** Every pipeline group reads with its host's settings: these variables, these defaults. */
export const HOST_CONSUMER_SETTINGS = {
  env: STREAM_CONSUMER_ENV,
  defaults: consumerSettingsOf(baseEnvSchema.parse({})),
} as const;

/** How a stream's entries are read, retried and dead-lettered. */
export type StreamReading =
  /**
   * StreamConsumer: own pending first, stale entries reclaimed, poison and exhausted entries dead-lettered.
   * `inOrder`: each partition is read by one replica at a time (a partition lease), so a partition's entries are
   * handled in stream order however many replicas run.
   */
  | { kind: "consumer-group"; settings: typeof HOST_CONSUMER_SETTINGS; deadLetter: string; inOrder: boolean }
  /** One stable consumer per group, so whoever takes over inherits what is pending; entries are deleted once done. */
  | { kind: "single-consumer"; consumer: string; retry: string }
  /**
   * Read from `$` without a group: whoever is not listening has nobody waiting any more. So an entry matters only
   * while it is new: about the newest `kept` are kept, and a stream nobody writes to for `idleExpiryMs` (a stopped
   * instance's) goes.
   */
  | { kind: "tail"; kept: number; idleExpiryMs: number }
  /** Appended once per identity and read whole by range; nothing consumes it. */
  | { kind: "audit-log" }
  /** Ids `0-<n>`, read by range from a cursor each reader keeps (no group); trimmed to the newest `kept`, and by age. */
  | { kind: "update-log"; kept: number };

export interface StreamSpec<S extends z.ZodType = z.ZodType> {
  name: string;
  schema: S;
  /**
   * `pipeline`: key `<prefix>:stream:{<name>:<partition>}`; `device`: under the device base
   * `B = <prefix>:os:{d:<deviceId>}`.
   */
  keyspace: "pipeline" | "device";
  /**
   * Sharded into STREAM_PARTITIONS partitions by this payload field (its owner's partition, `partitionOf`), so one
   * device's (or agent's) entries stay in order in one partition; absent: one partition (0).
   */
  partitionBy?: "deviceId" | "agentId";
  producers: readonly ServiceName[];
  consumers: Readonly<Record<string, ConsumerGroup | PerInstance<ConsumerGroup>>>;
  reading: StreamReading;
  /** What one entry says, in a line. */
  carries: string;
}

/** A tail stream's bounds: far above what one instance's readers can fall behind by, far below what would matter. */
const TAIL = { kind: "tail", kept: 1_000, idleExpiryMs: 10 * 60_000 } as const;

const hostGroups = (name: string, { inOrder = false } = {}) =>
  ({ kind: "consumer-group", settings: HOST_CONSUMER_SETTINGS, deadLetter: `${name}:dlq`, inOrder }) as const;

export const STREAM_CATALOG = {
  harnessDispatch: {
    name: "harness.dispatch",
    schema: harnessDispatchSchema,
    keyspace: "pipeline",
    partitionBy: "agentId",
    producers: ["harness-gateway"],
    consumers: {
      engineRunner: perInstance(
        "machineId",
        (machineId) =>
          ({
            group: `engine-runner.${machineId}`,
            service: "engine-runner",
          }) as const,
      ),
    },
    reading: hostGroups("harness.dispatch"),
    carries: "`input` (deliveryId, device, key, agent, text) or `stop`",
  },
  engineRecords: {
    name: "engine.records",
    schema: engineRecordEntrySchema,
    keyspace: "pipeline",
    partitionBy: "agentId",
    producers: ["engine-runner"],
    consumers: { evidenceExtractor: { group: "evidence-extractor", service: "evidence-extractor" } },
    reading: hostGroups("engine.records"),
    carries:
      "`records`: one runtime's records of one write, in seq order: raw engine frames (inbound, unmodified), what we wrote (outbound, linked to the input), hand-overs, runtime start/exit; `runtimeId` + gap-free `seq`",
  },
  harnessEvidence: {
    name: "harness.evidence",
    schema: harnessEvidenceSchema,
    keyspace: "pipeline",
    partitionBy: "agentId",
    producers: ["evidence-extractor"],
    consumers: { resultProducer: { group: "result-producer", service: "result-producer" } },
    // One device's results are logged, and so routed and spoken, in the order its engine completed them.
    reading: hostGroups("harness.evidence", { inOrder: true }),
    carries:
      "`input.delivered`, `input.consumed`, `turn.completed` (proven members), `evidence.missing`, `input.rejected`, `stop.confirmed`",
  },
  osRouted: {
    name: "os.routed",
    schema: osRoutedSchema,
    keyspace: "pipeline",
    partitionBy: "deviceId",
    producers: ["router"],
    consumers: { runResolver: { group: "run-resolver", service: "run-resolver" } },
    // A device's results are stored, and so spoken, in the order the router routed them.
    reading: hostGroups("os.routed", { inOrder: true }),
    carries:
      "one validated result with every member resolved to a local run, plus its canonical content hash",
  },
  osResolved: {
    name: "os.resolved",
    schema: osResolvedSchema,
    keyspace: "pipeline",
    partitionBy: "deviceId",
    producers: ["run-resolver"],
    consumers: { ttsDispatcher: { group: "tts-dispatcher", service: "tts-dispatcher" } },
    // A device's answers reach its outbox in the order they were resolved, so in routing order.
    reading: hostGroups("os.resolved", { inOrder: true }),
    carries: "result identity `(deviceId, serverInstanceId, resultId)`",
  },
  lampEvents: {
    name: "os.lamp_events",
    schema: lampEventSchema,
    keyspace: "pipeline",
    partitionBy: "deviceId",
    producers: ["device-gateway"],
    consumers: { ttsDispatcher: { group: "tts-dispatcher-acks", service: "tts-dispatcher" } },
    reading: hostGroups("os.lamp_events"),
    carries: 'Lamp playback acks and "say that again" requests',
  },
  lampDelivery: perInstance(
    "gatewayId",
    (gatewayId) =>
      ({
        name: `os.lamp_delivery.${gatewayId}`,
        schema: lampDeliverySchema,
        keyspace: "pipeline",
        producers: ["tts-dispatcher"],
        consumers: {},
        reading: TAIL,
        carries:
          "`playback.start` (from the playback worker) for a device whose socket that gateway instance holds",
      }) as const,
  ),
  gatewayReplies: perInstance(
    "gatewayId",
    (gatewayId) =>
      ({
        name: `os.gateway_replies.${gatewayId}`,
        schema: sendReplySchema,
        keyspace: "pipeline",
        producers: ["router"],
        consumers: {},
        reading: TAIL,
        carries:
          "the answer to a `send` command: `{deviceId, runId, receipt | null, error?}`, which the waiting `voice.request` returns",
      }) as const,
  ),
  deviceCommands: {
    name: "B:commands",
    schema: deviceCommandSchema,
    keyspace: "device",
    producers: ["device-gateway"],
    consumers: { router: { group: "router", service: "router" } },
    reading: {
      kind: "single-consumer",
      consumer: "owner",
      retry:
        "after a failure it re-reads its pending entries `HARNESS_RECONNECT_MS` later; a malformed entry is dropped",
    },
    carries: "`send` / `stop` per run, written in the Lua step that registers or cancels the run",
  },
  rejections: {
    name: "B:rejections",
    schema: rejectionRecordSchema,
    keyspace: "device",
    producers: ["router"],
    consumers: {},
    reading: { kind: "audit-log" },
    carries: "a rejected Harness event with its reason (once per identity, see `B:rejections-ids`)",
  },
  runUpdates: {
    name: "B:run-updates",
    schema: runUpdateRecordSchema,
    keyspace: "device",
    producers: ["device-gateway", "router", "run-resolver", "tts-dispatcher"],
    consumers: {},
    reading: { kind: "update-log", kept: RUN_UPDATES_KEPT },
    carries:
      "one `run.update` per change of a run the Lamp could care about, appended in the Lua step that made it (a pub/sub notice on the channel of the same name carries it to the gateways)",
  },
  protocolErrors: {
    name: "B:protocol-errors",
    schema: protocolErrorRecordSchema,
    keyspace: "device",
    producers: ["router"],
    consumers: {},
    reading: { kind: "audit-log" },
    carries: "the same resultId with different content or membership",
  },
} as const satisfies Record<string, StreamSpec | PerInstance<StreamSpec>>;

export interface QueueSpec<S extends z.ZodType = z.ZodType> {
  name: string;
  schema: S;
  producers: readonly ServiceName[];
  worker: ServiceName;
  /** BullMQ attempts and backoff, and the lock after which a dead worker's job runs again (the visibility timeout). */
  retry: { attemptsEnv: string; backoff: "exponential"; delayEnv: string; lockEnv: string };
  carries: string;
}

/** BullMQ queues, prefix `{<prefix>:bull}` (a hash tag: one queue, one Redis Cluster slot). */
export const QUEUE_CATALOG = {
  lampPlayback: {
    name: "lamp-playback",
    schema: playbackJobSchema,
    producers: ["tts-dispatcher"],
    worker: "tts-dispatcher",
    retry: {
      attemptsEnv: "PLAYBACK_MAX_ATTEMPTS",
      backoff: "exponential",
      delayEnv: "PLAYBACK_RETRY_DELAY_MS",
      lockEnv: "PLAYBACK_LOCK_DURATION_MS",
    },
    carries:
      "one job per playback (an outbox entry's answer, a failure notice, a repeat); the answer's job id is derived from the result identity",
  },
} as const satisfies Record<string, QueueSpec>;

/** The streams that consumer groups read with the host's settings (what must drain before a system is quiet). */
export const PIPELINE_STREAMS: readonly StreamSpec[] = Object.values(STREAM_CATALOG).flatMap((entry) =>
  typeof entry !== "function" && entry.reading.kind === "consumer-group" ? [entry] : [],
);
