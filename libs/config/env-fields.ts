import { z } from "zod";

/** Reusable field parsers for environment variables (all arrive as strings). */
export const envInt = (fallback: number, min = 0, max = Number.MAX_SAFE_INTEGER) =>
  z.coerce.number().int().min(min).max(max).default(fallback);

export const envBool = (fallback: boolean) =>
  z
    .enum(["1", "0", "true", "false", "on", "off", "yes", "no"])
    .default(fallback ? "true" : "false")
    .transform((value) => ["1", "true", "on", "yes"].includes(value));

export const envUrl = z.string().url();

/** `host:port` seeds of a Redis Cluster, comma-separated; empty or absent: a single Redis at REDIS_URL. */
export const envClusterNodes = z
  .string()
  .default("")
  .transform((value) =>
    value
      .split(",")
      .map((node) => node.trim())
      .filter((node) => node.length > 0),
  )
  .pipe(
    z.array(
      z
        .string()
        .regex(/^[^\s:]+:\d{1,5}$/, "host:port")
        .transform((node) => {
          const at = node.lastIndexOf(":");
          return { host: node.slice(0, at), port: Number(node.slice(at + 1)) };
        }),
    ),
  );

/** Settings every service reads: where Redis is, how keys are named, how stream consumers behave. */
export const baseEnvSchema = z.object({
  REDIS_URL: envUrl.default("redis://127.0.0.1:6379"),
  /** Set: Redis Cluster mode, these nodes are the seeds and only REDIS_URL's user and password are used. */
  REDIS_CLUSTER_NODES: envClusterNodes,
  KEY_PREFIX: z
    .string()
    .regex(/^[A-Za-z0-9_.-]{1,32}$/, "letters, digits, '_', '.', '-' (1-32)")
    .default("ll"),
  LOG_LEVEL: z.enum(["fatal", "error", "warn", "info", "debug", "trace", "silent"]).default("info"),
  HOST: z.string().default("127.0.0.1"),
  PORT: envInt(8080, 0, 65535),
  CONSUMER_NAME: z.string().min(1).max(128).optional(),
  STREAM_BATCH_SIZE: envInt(64, 1, 10_000),
  STREAM_BLOCK_MS: envInt(2_000, 10, 60_000),
  STREAM_CLAIM_MIN_IDLE_MS: envInt(30_000, 100),
  STREAM_MAX_DELIVERIES: envInt(5, 1, 1_000),
  STREAM_RETRY_DELAY_MS: envInt(500, 0, 600_000),
  /** How often each consumer trims its stream of what every group is past, and caps its dead letters. */
  STREAM_TRIM_INTERVAL_MS: envInt(10_000, 100, 3_600_000),
  DEAD_LETTER_MAX_LENGTH: envInt(10_000, 1, 10_000_000),
  /**
   * Partition lease of a replica reading an in-order stream (one reader per partition, e.g. harness.evidence): a
   * dead replica's partitions are read again this long after it stopped renewing.
   */
  STREAM_LEASE_TTL_MS: envInt(10_000, 300, 600_000),
  /** How many work partitions devices hash into (libs/redis/partitions.ts); the same on every process. */
  STREAM_PARTITIONS: envInt(4, 1, 1_024),
});

export type BaseEnv = z.infer<typeof baseEnvSchema>;

/** Values published in docs, samples and old defaults: a deployment that signs with one accepts anyone's token. */
const PLACEHOLDER_SECRETS = new Set([
  "change-me",
  "changeme",
  "dev-secret-change-me",
  "secret",
  "jwt-secret",
]);
const PLACEHOLDER_WORDS = /change-?me|replace-?me|placeholder/i;
const GENERATE_HINT = "generate one with `openssl rand -hex 32`";

/** A JWT signing secret: 32 bytes or more and no known placeholder, or the service refuses to start. */
export const envJwtSecret = z
  .string({ error: `required (32+ bytes); ${GENERATE_HINT}` })
  .refine((value) => !PLACEHOLDER_SECRETS.has(value.toLowerCase()) && !PLACEHOLDER_WORDS.test(value), {
    message: `a published placeholder, not a secret; ${GENERATE_HINT}`,
    abort: true,
  })
  .refine((value) => Buffer.byteLength(value, "utf8") >= 32, {
    message: `shorter than 32 bytes; ${GENERATE_HINT}`,
  });
