import { z } from "zod";
import { harnessEventSchema, legacySummaryPayloadSchema } from "../../libs/contract/harness-wire.js";
import { idempotencyKeySchema } from "../../libs/contract/identifiers.js";
import type { RunRecord } from "../../libs/os-store/run-record.js";
import { resolveMembers } from "./member-resolution.js";
import type { RouterStore } from "./router-store.js";
import { reject, type EventOrigin, type Verdict } from "./verdict.js";

/** The legacy wire allows the key (or a run id) at the top level of the event as well. */
const legacySummaryEventSchema = harnessEventSchema.extend({
  kind: z.literal("turn.summary"),
  payload: legacySummaryPayloadSchema,
  idempotencyKey: idempotencyKeySchema.optional(),
  runId: z.string().min(1).optional(),
});

/** A `turn.summary` without `payload.correlation` is read by the legacy rules below. */
export function isLegacySummary(frame: Record<string, unknown>, kind: string): boolean {
  const payload = frame.payload;
  const correlated = typeof payload === "object" && payload !== null && "correlation" in payload;
  return kind === "turn.summary" && !correlated;
}

/** The run a legacy summary names by its explicit key or run id, when it names exactly one that exists. */
export async function legacySummaryRun(
  store: RouterStore,
  frame: Record<string, unknown>,
): Promise<RunRecord | undefined> {
  const parsed = legacySummaryEventSchema.safeParse(frame);
  if (!parsed.success) return undefined;
  const run = await explicitRun(store, parsed.data);
  return "verdict" in run ? undefined : run;
}

/**
 * A `turn.summary` without correlation (today's single-input OS compatibility): applied only when every explicit
 * key or run id it carries names one and the same pending run of this agent, and that agent has no overlapping
 * pending input. Its result identity is synthetic (`legacy-summary:<deliveryId>`), so it resolves the run once.
 */
export async function resolveLegacySummary(
  store: RouterStore,
  frame: Record<string, unknown>,
  origin: EventOrigin,
  now: number,
): Promise<Verdict> {
  const parsed = legacySummaryEventSchema.safeParse(frame);
  if (!parsed.success) return reject("INVALID_EVENT", parsed.error.issues[0]?.message ?? "invalid summary");
  const event = parsed.data;
  const fullText = event.payload.fullText || event.payload.text || event.payload.recap;
  if (!fullText) return reject("INVALID_EVENT", "summary carries no text");
  const target = await explicitRun(store, event);
  if ("verdict" in target) return target;
  if (target.agentId !== origin.agentId)
    return reject("AGENT_MISMATCH", `run ${target.runId} belongs to agent ${target.agentId}`);
  const overlapping = (await store.pendingRuns()).filter((run) => run.agentId === origin.agentId);
  if (overlapping.length > 1)
    return reject("LEGACY_SUMMARY_OVERLAP", `agent has ${overlapping.length} pending inputs`);
  if (target.deliveryId === undefined || target.serverInstanceId === undefined)
    return { verdict: "wait", detail: "receipt of the summarized input not bound yet" };
  const claim = {
    wireKind: "turn.summary.legacy" as const,
    serverInstanceId: target.serverInstanceId,
    resultId: `legacy-summary:${target.deliveryId}`,
    outcome: "completed" as const,
    fullText,
    members: [{ deliveryId: target.deliveryId, idempotencyKey: target.idempotencyKey }],
  };
  return resolveMembers(store, claim, origin, now);
}

async function explicitRun(
  store: RouterStore,
  event: z.infer<typeof legacySummaryEventSchema>,
): Promise<RunRecord | Verdict> {
  const { payload } = event;
  const keys = new Set(
    [event.idempotencyKey, payload.idempotencyKey, payload.receipt?.idempotencyKey].filter(isText),
  );
  const runIds = new Set([event.runId, payload.runId, payload.run_id].filter(isText));
  if (keys.size === 0 && runIds.size === 0)
    return reject("LEGACY_SUMMARY_NO_KEY", "summary names no idempotencyKey or run id");
  if (keys.size > 1 || runIds.size > 1)
    return reject("LEGACY_SUMMARY_KEY_CONFLICT", "summary names more than one key or run id");
  const [key] = keys;
  const [runId] = runIds;
  const byKey = key === undefined ? undefined : await store.runIdByKey(key);
  if (byKey === null) return reject("UNKNOWN_MEMBER", `no run of this device has key ${key}`);
  if (byKey !== undefined && runId !== undefined && byKey !== runId)
    return reject("LEGACY_SUMMARY_KEY_CONFLICT", "key and run id name different runs");
  const run = await store.run(byKey ?? runId ?? "");
  return run ?? reject("UNKNOWN_MEMBER", `no run ${runId} on this device`);
}

const isText = (value: string | undefined): value is string => value !== undefined && value.length > 0;
