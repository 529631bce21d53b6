import { z } from "zod";
import { replyRouteSchema } from "../contract/lamp-wire.js";
import {
  receiptInputSchema,
  receiptSchema,
  receiptStateSchema,
  type Receipt,
  type ReceiptInput,
} from "../contract/receipt.js";
import { runStateSchema } from "../contract/run-update.js";
import { outcomeSchema } from "../contract/turn-result.js";
import { resultKeyOf } from "./os-keys.js";

export { runStateSchema, type RunState } from "../contract/run-update.js";

const optionalText = z.string().min(1).optional();
const optionalMs = z.coerce.number().int().nonnegative().optional();

/** The `B:run:<runId>` hash as stored (all values arrive as strings; absent fields are simply missing). */
const storedRunSchema = z.object({
  runId: z.string().min(1),
  deviceId: z.string().min(1),
  agentId: z.string().min(1),
  machineId: z.string().min(1),
  idempotencyKey: z.string().min(1),
  requestId: z.string().min(1),
  /** Canonical hash of the voice.request: a reused requestId with other content is refused. */
  requestHash: optionalText,
  text: z.string(),
  voiceTargetId: z.string().min(1),
  voiceTargetExpiresAt: z.coerce.number().int().nonnegative(),
  replyRoute: replyRouteSchema,
  state: runStateSchema,
  outcome: outcomeSchema.optional(),
  resultId: optionalText,
  /** The resultKey of the result the router claimed this run for (set once, before that result is routed). */
  routedAs: optionalText,
  deliveryId: optionalText,
  serverInstanceId: optionalText,
  /** The last receipt the Harness gave for this run's key, field by field (see `runReceipt`). */
  receiptState: receiptStateSchema.optional(),
  receiptTurnId: optionalText,
  receiptAt: optionalMs,
  /** `receipt.input` as `<mode>/<phase>`. */
  receiptInput: z
    .string()
    .regex(/^[a-z_]+\/[a-z_]+$/)
    .optional(),
  /** JSON of `receipt.error`, when the receipt has one. */
  receiptError: optionalText,
  /** Transport instance the send was first attempted on: a retry on another instance reconciles, never resends. */
  sentVia: optionalText,
  sendError: optionalText,
  /** Why the run ended `unknown` (a receipt error code, a send refusal, or an OS deadline reason). */
  endReason: optionalText,
  stopKey: optionalText,
  cancelledAt: optionalMs,
  createdAt: z.coerce.number().int().nonnegative(),
  resolvedAt: optionalMs,
});

/**
 * A run as read: the stored hash, and the `resultKey` of the result that resolved it (the run stores its resultId;
 * its serverInstanceId is the result's, which the resolution checked).
 */
export const runRecordSchema = storedRunSchema.transform((run): typeof run & { resultKey?: string } =>
  run.resultId !== undefined && run.serverInstanceId !== undefined
    ? { ...run, resultKey: resultKeyOf(run.serverInstanceId, run.resultId) }
    : run,
);
export type RunRecord = z.infer<typeof runRecordSchema>;

/** A hash read with HGETALL: empty means absent; a malformed record is a store bug and throws. */
export function parseRunRecord(hash: Record<string, string>): RunRecord | undefined {
  if (Object.keys(hash).length === 0) return undefined;
  return runRecordSchema.parse(hash);
}

const iso = (ms: number | undefined) => (ms === undefined ? null : new Date(ms).toISOString());

/** `receipt.input` of the run's last receipt: how the Harness handed the input to the engine. */
function receiptInput(run: RunRecord): ReceiptInput | undefined {
  if (run.receiptInput === undefined) return undefined;
  const [mode, phase] = run.receiptInput.split("/");
  return receiptInputSchema.parse({ mode, phase });
}

/**
 * The last receipt the Harness gave for the run's key, as the run keeps it (the receipt of a turn.send: its fields
 * the run holds anyway, and the ones only the receipt has); undefined before the first binding.
 */
export function runReceipt(run: RunRecord): Receipt | undefined {
  const { receiptState, deliveryId, serverInstanceId, receiptAt } = run;
  if (
    receiptState === undefined ||
    deliveryId === undefined ||
    serverInstanceId === undefined ||
    receiptAt === undefined
  )
    return undefined;
  const input = receiptInput(run);
  return receiptSchema.parse({
    idempotencyKey: run.idempotencyKey,
    deliveryId,
    operation: "turn.send",
    state: receiptState,
    machineId: run.machineId,
    agentId: run.agentId,
    serverInstanceId,
    turnId: run.receiptTurnId ?? null,
    error: run.receiptError === undefined ? null : JSON.parse(run.receiptError),
    at: receiptAt,
    ...(input === undefined ? {} : { input }),
  });
}

/** The public JSON of a run (docs/wire-protocol.md, "OS query API"). */
export function runView(run: RunRecord) {
  return {
    runId: run.runId,
    requestId: run.requestId,
    state: run.state,
    outcome: run.outcome ?? null,
    reason: run.endReason ?? null,
    input: receiptInput(run) ?? null,
    resultId: run.resultId ?? null,
    idempotencyKey: run.idempotencyKey,
    deliveryId: run.deliveryId ?? null,
    serverInstanceId: run.serverInstanceId ?? null,
    receiptState: run.receiptState ?? null,
    agentId: run.agentId,
    machineId: run.machineId,
    voiceTarget: { id: run.voiceTargetId, expiresAt: iso(run.voiceTargetExpiresAt) },
    replyRoute: run.replyRoute,
    cancelledAt: iso(run.cancelledAt),
    createdAt: iso(run.createdAt),
    resolvedAt: iso(run.resolvedAt),
  };
}
export type RunView = ReturnType<typeof runView>;
