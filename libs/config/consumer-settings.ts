import type { BaseEnv } from "./env-fields.js";

/** How every stream consumer of a host reads, retries and dead-letters (libs/streams/stream-consumer.ts). */
export interface StreamConsumerSettings {
  batchSize: number;
  blockMs: number;
  claimMinIdleMs: number;
  maxDeliveries: number;
  retryDelayMs: number;
  /** Trim the stream of what every group is past, and cap its dead letters, this often (absent: never). */
  trimIntervalMs?: number;
  deadLetterMaxLength?: number;
}

/** The environment variable behind each consumer setting: every pipeline group uses its host's values. */
export const STREAM_CONSUMER_ENV = {
  batchSize: "STREAM_BATCH_SIZE",
  blockMs: "STREAM_BLOCK_MS",
  claimMinIdleMs: "STREAM_CLAIM_MIN_IDLE_MS",
  maxDeliveries: "STREAM_MAX_DELIVERIES",
  retryDelayMs: "STREAM_RETRY_DELAY_MS",
  trimIntervalMs: "STREAM_TRIM_INTERVAL_MS",
  deadLetterMaxLength: "DEAD_LETTER_MAX_LENGTH",
} as const satisfies Record<keyof StreamConsumerSettings, keyof BaseEnv>;

/** The host's consumer settings, read from the variables named in STREAM_CONSUMER_ENV. */
export function consumerSettingsOf(base: BaseEnv): StreamConsumerSettings {
  const env = STREAM_CONSUMER_ENV;
  return {
    batchSize: base[env.batchSize],
    blockMs: base[env.blockMs],
    claimMinIdleMs: base[env.claimMinIdleMs],
    maxDeliveries: base[env.maxDeliveries],
    retryDelayMs: base[env.retryDelayMs],
    trimIntervalMs: base[env.trimIntervalMs],
    deadLetterMaxLength: base[env.deadLetterMaxLength],
  };
}
