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

/** Settings every service reads: where Redis is, how keys are named, how stream consumers behave. */
export const baseEnvSchema = z.object({
  REDIS_URL: envUrl.default("redis://127.0.0.1:6379"),
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
