import { z } from "zod";
import { crashPointEnv } from "../../libs/test-support/crash-point.js";

/** Crash tests: FAILPOINT=`run-resolver.after-store`. */
export const runResolverConfigSchema = z.object({ ...crashPointEnv });
