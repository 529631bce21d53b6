import { z } from "zod";
import { envInt } from "../../libs/config/env-fields.js";
import { retentionEnvFields } from "../../libs/harness-store/retention-config.js";

export const producerEnvSchema = z.object({
  ...retentionEnvFields,
  /** How often the retention sweep looks for devices whose oldest record is due. */
  RETENTION_SWEEP_INTERVAL_MS: envInt(10_000, 100, 3_600_000),
});
export type ProducerConfig = z.infer<typeof producerEnvSchema>;
