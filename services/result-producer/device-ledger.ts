import type { RedisClient } from "../../libs/redis/redis-client.js";
import { z } from "zod";
import type { Keyspace } from "../../libs/redis/keyspace.js";
import { NamedLuaScript } from "../../libs/redis/lua-script.js";
import { luaList } from "../../libs/redis/lua-list.js";
import { eventsChannel, HarnessDeviceKeys } from "../../libs/harness-store/harness-keys.js";
import { relistAfterMsFor, type RetentionIndex } from "../../libs/retention/retention-index.js";
import { harnessRetentionIndex } from "../../libs/retention/retention-keys.js";
import type { ProducerConfig } from "./config.js";

/**
 * A withheld piece names its reason (an error code); an applied or duplicate result names its resultId (a duplicate,
 * the one it first got), and a duplicate unknown its code.
 */
const ledgerAnswerSchema = z.discriminatedUnion("status", [
  z.object({ status: z.literal("withheld"), detail: z.string().min(1) }),
  z.object({ status: z.enum(["applied", "duplicate"]), detail: z.string().min(1).optional() }),
]);

/** One answer per piece of evidence, in order. */
const applyReplySchema = z.object({ answers: luaList(ledgerAnswerSchema) });
const applyScript = NamedLuaScript.fromFile<
  {
    now: number;
    eventsChannel: string;
    deviceId: string;
    eventCapacity: number;
    pieces: { op: LedgerOp; evidenceId: string; args: object }[];
  },
  typeof applyReplySchema
>(new URL("./lua/apply-evidence-1.lua", import.meta.url), applyReplySchema);

export type LedgerOp = "delivered" | "consumed" | "rejected" | "stop_confirmed" | "unknown" | "result";

export type LedgerAnswer = z.infer<typeof ledgerAnswerSchema>;

/** One piece of evidence as the ledger applies it to one device. */
export interface LedgerEntry {
  op: LedgerOp;
  evidenceId: string;
  args: object;
}

/** One device's receipts, results and event log, changed only through apply-evidence-1.lua. */
export class DeviceLedger {
  private readonly retention: RetentionIndex;

  constructor(
    private readonly redis: RedisClient,
    private readonly keys: Keyspace,
    private readonly config: ProducerConfig,
  ) {
    const shortestRetentionMs =
      1000 *
      Math.min(
        config.EVENT_RETENTION_SECONDS,
        config.RESULT_RETENTION_SECONDS,
        config.RECEIPT_RETENTION_SECONDS,
      );
    this.retention = harnessRetentionIndex(redis, keys, relistAfterMsFor(shortestRetentionMs));
  }

  /** Applies the device's entries in order, in one atomic step; one answer per entry. */
  async apply(deviceId: string, entries: readonly LedgerEntry[]): Promise<LedgerAnswer[]> {
    const now = Date.now();
    const applied = applyScript.run(this.redis, [new HarnessDeviceKeys(this.keys, deviceId).base], {
      now,
      eventsChannel: eventsChannel(this.keys),
      deviceId,
      eventCapacity: this.config.EVENT_CAPACITY,
      pieces: entries.map(({ op, evidenceId, args }) => ({ op, evidenceId, args })),
    });
    // Issued in the same tick, so Redis runs it right after the apply step (see libs/retention/retention-index.ts).
    const [{ answers }] = await Promise.all([applied, this.retention.list(deviceId, now)]);
    return answers;
  }
}
