import { z } from "zod";

export const runResolverConfigSchema = z.object({
  FAILPOINT: z.string().optional(),
});
