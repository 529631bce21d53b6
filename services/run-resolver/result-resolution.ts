import { STREAM_CATALOG } from "../../libs/contract/catalog.js";
import type { RedisClient } from "../../libs/redis/redis-client.js";
import { z } from "zod";
import type { Registry } from "prom-client";
import { type OsRouted } from "../../libs/contract/pipeline-payloads.js";
import type { Logger } from "../../libs/logging/logger.js";
import { OsDeviceKeys, resultKeyOf } from "../../libs/os-store/os-keys.js";
import type { Keyspace } from "../../libs/redis/keyspace.js";
import { NamedLuaScript } from "../../libs/redis/lua-script.js";
import { appendToStream } from "../../libs/streams/stream-writer.js";
import type { CrashPoint } from "../../libs/test-support/crash-point.js";
import { resolverMetrics, type ResolverMetrics } from "./resolver-metrics.js";

const storeReply = z.discriminatedUnion("outcome", [
  z.object({ outcome: z.literal("stored"), skipped: z.number().int().nonnegative() }),
  z.object({ outcome: z.enum(["stored_not_emitted", "already_emitted", "unclaimed"]) }),
  z.object({ outcome: z.literal("content_changed"), storedHash: z.string().min(1) }),
]);
const storeResult = NamedLuaScript.fromFile<
  {
    resultKey: string;
    resultId: string;
    serverInstanceId: string;
    deviceId: string;
    agentId: string;
    outcome: OsRouted["outcome"];
    fullText: string;
    engineTurnId?: string;
    membersJson: string;
    contentHash: string;
    now: number;
    runIds: string[];
  },
  typeof storeReply
>(new URL("./lua/store-result-1.lua", import.meta.url), storeReply);

/**
 * Applies one routed result: one Lua step stores it and resolves exactly its members (or finds it already
 * stored), then `os.resolved` is emitted and the result marked emitted. Redelivery at any point changes nothing:
 * a stored-but-not-emitted result is emitted once more, an emitted one emits nothing.
 */
export class ResultResolution {
  private readonly metrics: ResolverMetrics;

  constructor(
    private readonly redis: RedisClient,
    private readonly keys: Keyspace,
    private readonly crashPoint: CrashPoint,
    private readonly log: Logger,
    registry: Registry,
  ) {
    this.metrics = resolverMetrics(registry);
  }

  async apply(routed: OsRouted): Promise<void> {
    const device = new OsDeviceKeys(this.keys, routed.deviceId);
    const resultKey = resultKeyOf(routed.serverInstanceId, routed.resultId);
    const reply = await storeResult.run(this.redis, [device.base], {
      resultKey,
      resultId: routed.resultId,
      serverInstanceId: routed.serverInstanceId,
      deviceId: routed.deviceId,
      agentId: routed.agentId,
      outcome: routed.outcome,
      fullText: routed.fullText,
      ...(routed.engineTurnId === undefined ? {} : { engineTurnId: routed.engineTurnId }),
      membersJson: JSON.stringify(routed.members),
      contentHash: routed.contentHash,
      now: Date.now(),
      runIds: routed.members.map((member) => member.runId),
    });
    this.metrics.outcomes.inc({ outcome: reply.outcome });
    if (reply.outcome === "content_changed") return this.refuseChangedContent(routed, reply.storedHash);
    if (reply.outcome === "already_emitted") return;
    if (reply.outcome === "unclaimed") return this.refuseUnclaimed(routed);
    if (reply.outcome === "stored" && reply.skipped > 0) {
      this.metrics.skippedRuns.inc(reply.skipped);
      this.log.warn(
        { deviceId: routed.deviceId, resultId: routed.resultId, skipped: reply.skipped },
        "stored result left listed runs as they were (no longer pending or not claimed for it)",
      );
    }
    await this.crashPoint.reach("run-resolver.after-store");
    await appendToStream(this.redis, this.keys, STREAM_CATALOG.osResolved, {
      deviceId: routed.deviceId,
      serverInstanceId: routed.serverInstanceId,
      resultId: routed.resultId,
      resolvedAt: Date.now(),
    });
    await this.redis.hsetnx(device.result(resultKey), "emittedAt", Date.now());
  }

  /** No router claimed this identity with this content: the entry was not written by a router, nothing is applied. */
  private refuseUnclaimed(routed: OsRouted): void {
    this.log.warn(
      { deviceId: routed.deviceId, resultId: routed.resultId, contentHash: routed.contentHash },
      "routed result without the router's claim; nothing applied",
    );
  }

  /**
   * The router claims a result identity with its content hash before it routes it and records a reuse as a protocol
   * error, so other content under a stored identity here means the store lost the claim: nothing is applied.
   */
  private refuseChangedContent(routed: OsRouted, storedHash: string): void {
    this.log.error(
      { deviceId: routed.deviceId, resultId: routed.resultId, storedHash, receivedHash: routed.contentHash },
      "routed result differs from the stored one under the same identity; nothing applied",
    );
  }
}
