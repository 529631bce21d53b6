import type { RedisClient } from "../../libs/redis/redis-client.js";
import { z } from "zod";
import type { Registry } from "prom-client";
import { STREAMS, type OsRouted } from "../../libs/contract/streams.js";
import type { Logger } from "../../libs/logging/logger.js";
import { OsDeviceKeys, resultKeyOf } from "../../libs/os-store/os-keys.js";
import { rejectionReasonSchema, type RejectionReason } from "../../libs/os-store/result-record.js";
import type { Keyspace } from "../../libs/redis/keyspace.js";
import { LuaScript } from "../../libs/redis/lua-script.js";
import { appendToStream } from "../../libs/streams/stream-writer.js";
import type { CrashPoint } from "../../libs/test-support/crash-point.js";
import { recordOnce } from "./audit-log.js";
import { resolverMetrics, type ResolverMetrics } from "./resolver-metrics.js";

/** `{outcome, storedHash | ''}`, or `{member_invalid, reason, runId}` naming the first member that no longer matches. */
const storeResult = LuaScript.fromFile(
  new URL("./lua/store-result-1.lua", import.meta.url),
  z.union([
    z.tuple([z.enum(["stored", "stored_not_emitted", "already_emitted", "content_changed"]), z.string()]),
    z.tuple([
      z.literal("member_invalid"),
      rejectionReasonSchema.extract([
        "UNKNOWN_MEMBER",
        "KEY_MISMATCH",
        "DELIVERY_MISMATCH",
        "AGENT_MISMATCH",
        "INSTANCE_MISMATCH",
        "MEMBER_NOT_PENDING",
      ]),
      z.string(),
    ]),
  ]),
);

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
    const reply = await storeResult.run(
      this.redis,
      [device.base],
      [
        resultKey,
        routed.resultId,
        routed.serverInstanceId,
        routed.deviceId,
        routed.agentId,
        routed.outcome,
        routed.fullText,
        routed.engineTurnId ?? "",
        JSON.stringify(routed.members),
        routed.contentHash,
        Date.now(),
        routed.members.length,
        ...routed.members.flatMap((member) => [member.runId, member.deliveryId, member.idempotencyKey]),
      ],
    );
    this.metrics.outcomes.inc({ outcome: reply[0] });
    if (reply[0] === "member_invalid") return this.recordRejection(device, routed, reply[1], reply[2]);
    if (reply[0] === "content_changed") return this.recordProtocolError(device, routed, reply[1]);
    if (reply[0] === "already_emitted") return;
    await this.crashPoint.reach("run-resolver.after-store");
    await appendToStream(this.redis, this.keys, STREAMS.osResolved, {
      deviceId: routed.deviceId,
      serverInstanceId: routed.serverInstanceId,
      resultId: routed.resultId,
      resolvedAt: Date.now(),
    });
    await this.redis.hsetnx(device.result(resultKey), "emittedAt", Date.now());
  }

  private async recordProtocolError(device: OsDeviceKeys, routed: OsRouted, storedHash: string) {
    const recorded = await recordOnce(
      this.redis,
      device.base,
      "protocol-errors",
      `${resultKeyOf(routed.serverInstanceId, routed.resultId)}|${routed.contentHash}`,
      {
        code: "RESULT_CONTENT_CHANGED",
        serverInstanceId: routed.serverInstanceId,
        resultId: routed.resultId,
        storedHash,
        receivedHash: routed.contentHash,
        transportInstanceId: routed.source.transportInstanceId,
        eventId: routed.source.eventId,
        at: Date.now(),
      },
    );
    if (recorded) this.metrics.protocolErrors.inc({ code: "RESULT_CONTENT_CHANGED" });
    this.log.error(
      { deviceId: routed.deviceId, resultId: routed.resultId, storedHash, receivedHash: routed.contentHash },
      "protocol error: result id reused with different content or membership",
    );
  }

  /** A member changed between routing and storing (e.g. another result resolved it): nothing is applied. */
  private async recordRejection(
    device: OsDeviceKeys,
    routed: OsRouted,
    reason: RejectionReason,
    runId: string,
  ) {
    const recorded = await recordOnce(
      this.redis,
      device.base,
      "rejections",
      `resolver|${resultKeyOf(routed.serverInstanceId, routed.resultId)}|${routed.contentHash}`,
      {
        reason,
        detail: `run ${runId} no longer matches`,
        kind: routed.source.wireKind,
        agentId: routed.agentId,
        transportInstanceId: routed.source.transportInstanceId,
        eventId: routed.source.eventId,
        serverInstanceId: routed.serverInstanceId,
        resultId: routed.resultId,
        rejectedBy: "run-resolver",
        at: Date.now(),
      },
    );
    if (recorded) this.metrics.rejected.inc({ reason });
  }
}
