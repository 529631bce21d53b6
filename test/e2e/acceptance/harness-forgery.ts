import { canonicalJson } from "../../../libs/contract/canonical-json.js";
import { HarnessDeviceKeys } from "../../../libs/harness-store/harness-keys.js";
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
  const device = new HarnessDeviceKeys(stack.keys, forged.deviceId);
  const { payload } = forged;
  const members = payload.correlation.inputs;
  const now = Date.now();
  const eventId = await stack.redis.incr(device.eventSequence);
  await stack.redis
    .multi()
    .hset(device.result(payload.resultId), {
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
    .zadd(device.results, now, payload.resultId)
    .xadd(
      device.eventLog,
      `0-${eventId}`,
      "e",
      JSON.stringify({ kind: "result", resultId: payload.resultId, at: now }),
    )
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
  const device = new HarnessDeviceKeys(stack.keys, deviceId);
  const logged = new Map((await harnessEventLog(stack, deviceId)).map((event) => [event.eventId, event]));
  const kinds: string[] = [];
  for (const eventId of eventIds) {
    const event = logged.get(eventId);
    if (event === undefined) throw new Error(`event ${eventId} of ${deviceId} is not in the log`);
    const copyId = await stack.redis.incr(device.eventSequence);
    await stack.redis.xadd(device.eventLog, `0-${copyId}`, "e", JSON.stringify(event.body));
    kinds.push(event.kind);
  }
  await stack.redis.publish(stack.keys.key("h", "events"), deviceId);
  return kinds;
}

/** The device's logged events, oldest first: eventId and body. */
export async function harnessEventLog(
  stack: E2EStack,
  deviceId: string,
): Promise<{ eventId: number; kind: string; body: Record<string, unknown> }[]> {
  const entries = await stack.redis.xrange(new HarnessDeviceKeys(stack.keys, deviceId).eventLog, "-", "+");
  return entries.map(([id, fields]) => {
    const body = JSON.parse(fields[1] ?? "{}") as Record<string, unknown>;
    return { eventId: Number(id.slice(2)), kind: String(body.kind), body };
  });
}
