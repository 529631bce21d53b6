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
