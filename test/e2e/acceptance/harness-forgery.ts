import { canonicalJson } from "../../../libs/contract/canonical-json.js";
import type { TurnResultPayload } from "../../../libs/contract/turn-result.js";
import { MACHINE, type E2EStack } from "../stack.js";

export interface ForgedResult {
  deviceId: string;
  /** The agent the Harness says produced the result (the event's top-level agentId). */
  agentId: string;
  payload: TurnResultPayload;
}

/** The Harness transport instance of the stack (created once by the first Harness service that needed it). */
export async function harnessInstance(stack: E2EStack): Promise<string> {
  const instance = await stack.redis.get(stack.keys.key("h", "instance"));
  if (!instance) throw new Error("the Harness has no serverInstanceId yet");
  return instance;
}

/**
 * Stores a result in the device's Harness store and appends it to the device's event log exactly as the
 * result-producer does (docs/architecture.md "Harness store"), bypassing only its membership check: the stand-in
 * for a faulty or compromised Harness. The harness-gateway then serves it to the router over the real WebSocket
 * like any other result, so the router sees precisely the event a wrong Harness would send.
 */
export async function forgeHarnessResult(stack: E2EStack, forged: ForgedResult): Promise<void> {
  const base = stack.keys.harnessDevice(forged.deviceId);
  const { payload } = forged;
  const members = payload.correlation.inputs;
  const now = Date.now();
  const eventId = await stack.redis.incr(`${base}:event-seq`);
  await stack.redis
    .multi()
    .hset(`${base}:result:${payload.resultId}`, {
      resultId: payload.resultId,
      payload: canonicalJson(payload),
      agentId: forged.agentId,
      machineId: MACHINE,
      outcome: payload.outcome,
      scope: payload.correlation.scope,
      singleKey: members.length === 1 ? (members[0]?.idempotencyKey ?? "") : "",
      singleTurnId: "",
      storedAt: now,
    })
    .zadd(`${base}:results`, now, payload.resultId)
    .hset(
      `${base}:event-body`,
      eventId,
      JSON.stringify({ kind: "result", resultId: payload.resultId, at: now }),
    )
    .zadd(`${base}:events`, eventId, eventId)
    .publish(stack.keys.key("h", "events"), forged.deviceId)
    .exec();
}

/**
 * Appends copies of logged events of the device at the end of its Harness event log, in the given order: what a
 * Harness that duplicates and reorders its stream would send. Returns the copied bodies' kinds.
 */
export async function reappendHarnessEvents(
  stack: E2EStack,
  deviceId: string,
  eventIds: number[],
): Promise<string[]> {
  const base = stack.keys.harnessDevice(deviceId);
  const kinds: string[] = [];
  for (const eventId of eventIds) {
    const body = await stack.redis.hget(`${base}:event-body`, String(eventId));
    if (body === null) throw new Error(`event ${eventId} of ${deviceId} is not in the log`);
    const copyId = await stack.redis.incr(`${base}:event-seq`);
    await stack.redis
      .multi()
      .hset(`${base}:event-body`, copyId, body)
      .zadd(`${base}:events`, copyId, copyId)
      .exec();
    kinds.push((JSON.parse(body) as { kind: string }).kind);
  }
  await stack.redis.publish(stack.keys.key("h", "events"), deviceId);
  return kinds;
}

/** The device's logged events, oldest first: eventId and body. */
export async function harnessEventLog(
  stack: E2EStack,
  deviceId: string,
): Promise<{ eventId: number; kind: string; body: Record<string, unknown> }[]> {
  const base = stack.keys.harnessDevice(deviceId);
  const ids = await stack.redis.zrange(`${base}:events`, 0, -1);
  if (ids.length === 0) return [];
  const bodies = await stack.redis.hmget(`${base}:event-body`, ...ids);
  return ids.map((id, index) => {
    const body = JSON.parse(bodies[index] ?? "{}") as Record<string, unknown>;
    return { eventId: Number(id), kind: String(body.kind), body };
  });
}
