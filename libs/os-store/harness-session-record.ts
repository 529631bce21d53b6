import { z } from "zod";

/**
 * `B:harness-session`: the router's account of the device's Harness session, for operators (the console). Written by
 * the router replica holding the session when its hello is answered and when the session ends; nothing decides on
 * it. A replica that died leaves `open`, so readers trust it only while the lease it names is still held.
 */
export const harnessSessionRecordSchema = z.object({
  state: z.enum(["open", "closed"]),
  router: z.string().min(1),
  transportInstanceId: z.string().min(1),
  machineId: z.string().min(1),
  capabilities: z.string().transform((json) => z.array(z.string()).parse(JSON.parse(json))),
  resumed: z.enum(["true", "false"]).transform((flag) => flag === "true"),
  openedAt: z.coerce.number().int().nonnegative(),
  closedAt: z.coerce.number().int().nonnegative().optional(),
});
export type HarnessSessionRecord = z.infer<typeof harnessSessionRecordSchema>;

export function parseHarnessSessionRecord(hash: Record<string, string>): HarnessSessionRecord | undefined {
  if (Object.keys(hash).length === 0) return undefined;
  return harnessSessionRecordSchema.parse(hash);
}
