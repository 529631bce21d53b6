import type { RedisClient } from "../../libs/redis/redis-client.js";
import { z } from "zod";
import type { Keyspace } from "../../libs/redis/keyspace.js";
import { LuaScript } from "../../libs/redis/lua-script.js";
import { eventsChannel, HarnessDeviceKeys } from "../../libs/harness-store/harness-keys.js";
import type { RetentionIndex } from "../../libs/retention/retention-index.js";
import { harnessRetentionIndex } from "../../libs/retention/retention-keys.js";
import type { ProducerConfig } from "./config.js";

/** {status, detail}: a duplicate answers the detail its first application stored. */
const applyScript = LuaScript.fromFile(
  new URL("./lua/apply-evidence-1.lua", import.meta.url),
  z.tuple([z.enum(["applied", "withheld", "duplicate"]), z.string()]),
);

export type LedgerOp = "delivered" | "consumed" | "rejected" | "stop_confirmed" | "unknown" | "result";

export interface LedgerAnswer {
  status: "applied" | "withheld" | "duplicate";
  detail: string;
}

/** One device's receipts, results and event log, changed only through apply-evidence-1.lua. */
export class DeviceLedger {
  private readonly retention: RetentionIndex;

  constructor(
    private readonly redis: RedisClient,
    private readonly keys: Keyspace,
    private readonly config: ProducerConfig,
  ) {
    this.retention = harnessRetentionIndex(redis, keys);
  }

  async apply(deviceId: string, op: LedgerOp, evidenceId: string, args: object): Promise<LedgerAnswer> {
    const now = Date.now();
    const applied = applyScript.run(
      this.redis,
      [new HarnessDeviceKeys(this.keys, deviceId).base],
      [
        op,
        evidenceId,
        now,
        eventsChannel(this.keys),
        deviceId,
        this.config.EVENT_CAPACITY,
        JSON.stringify(args),
      ],
    );
    // Issued in the same tick, so Redis runs it right after the apply step (see libs/retention/retention-index.ts).
    const [[status, detail]] = await Promise.all([applied, this.retention.list(deviceId, now)]);
    return { status, detail };
  }
}
