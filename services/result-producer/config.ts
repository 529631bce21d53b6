import { z } from "zod";
import { retentionEnvFields } from "../harness-gateway/store/retention-config.js";

export const producerEnvSchema = z.object({ ...retentionEnvFields });
export type ProducerConfig = z.infer<typeof producerEnvSchema>;
