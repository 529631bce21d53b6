import { z } from "zod";
import { envInt } from "../../libs/config/env-fields.js";
import { parseConfig } from "../../libs/config/load-config.js";
import type { EvidenceLimits } from "./runtime-state.js";

/** Caps that keep per-runtime evidence state bounded; past a cap the oldest evidence fails closed (EVIDENCE_EVICTED). */
export const evidenceExtractorEnvSchema = z.object({
  EVIDENCE_MAX_OPEN_INPUTS: envInt(256, 1, 100_000),
  EVIDENCE_MAX_CHAIN_ROWS: envInt(5_000, 16, 1_000_000),
  EVIDENCE_MAX_OPEN_TURNS: envInt(256, 1, 100_000),
  /** Tolerated skew between the runner's hand-over clock and the transcript's row timestamps. */
  EVIDENCE_CLOCK_SKEW_MS: envInt(2_000, 0, 600_000),
  /** How long a record waits for its runtime's previous seq before it is failed for a later retry. */
  EVIDENCE_ORDER_WAIT_MS: envInt(2_000, 0, 60_000),
  /** Identity bindings are kept this long after their last write, and a closed runtime's state after it closed. */
  EVIDENCE_BINDING_RETENTION_MS: envInt(7 * 24 * 3_600_000, 60_000),
});
export type EvidenceExtractorEnv = z.infer<typeof evidenceExtractorEnvSchema>;

export function parseEvidenceExtractorConfig(env: NodeJS.ProcessEnv): EvidenceExtractorEnv {
  return parseConfig(evidenceExtractorEnvSchema, env);
}

export function limitsOf(config: EvidenceExtractorEnv): EvidenceLimits {
  return {
    maxOpenInputs: config.EVIDENCE_MAX_OPEN_INPUTS,
    maxChainRows: config.EVIDENCE_MAX_CHAIN_ROWS,
    maxOpenTurns: config.EVIDENCE_MAX_OPEN_TURNS,
    clockSkewMs: config.EVIDENCE_CLOCK_SKEW_MS,
  };
}
