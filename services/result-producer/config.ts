import { z } from "zod";
import { retentionEnvFields } from "../../libs/harness-store/retention-config.js";

export const producerEnvSchema = z.object({ ...retentionEnvFields });
export type ProducerConfig = z.infer<typeof producerEnvSchema>;
