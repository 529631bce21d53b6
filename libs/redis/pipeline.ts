import type { ChainableCommander } from "ioredis";

/**
 * Sends a pipeline (one round trip) and fails as a single command would: with the first command's error. A
 * pipeline is not a transaction, so the commands before the failed one took effect.
 */
export async function execPipeline(pipeline: ChainableCommander): Promise<unknown[]> {
  const replies = (await pipeline.exec()) ?? [];
  const failed = replies.find(([error]) => error !== null);
  if (failed) throw failed[0];
  return replies.map(([, reply]) => reply);
}
