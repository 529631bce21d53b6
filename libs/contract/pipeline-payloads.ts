import { z } from "zod";
import { correlationKindSchema, engineKindSchema } from "./engine.js";
import { epochMsSchema, idempotencyKeySchema, nonEmpty, opaqueIdSchema } from "./identifiers.js";
import { receiptInputSchema } from "./receipt.js";
import { outcomeSchema } from "./turn-result.js";

/**
 * The payloads of the pipeline streams (see `catalog.ts` for what flows where). Every pipeline stream entry has a
 * single field `payload` holding the JSON of one of these. Producers validate before XADD, consumers after XREAD.
 */

const deviceInputRef = {
  deliveryId: opaqueIdSchema,
  deviceId: opaqueIdSchema,
  idempotencyKey: idempotencyKeySchema,
};

// ---- harness.dispatch: harness-gateway -> engine-runner --------------------------------------------------------

export const dispatchInputSchema = z.strictObject({
  kind: z.literal("input"),
  ...deviceInputRef,
  agentId: opaqueIdSchema,
  machineId: opaqueIdSchema,
  text: z.string().min(1),
  reservedAt: epochMsSchema,
});

/**
 * turn.stop: stop what the device owns of the agent's work (docs/evidence.md "Stops"). `targetIdempotencyKey` names
 * the device's input the stop is for; its own receipt completes when the engine confirms or the input is withdrawn.
 */
export const dispatchStopSchema = z.strictObject({
  kind: z.literal("stop"),
  ...deviceInputRef,
  agentId: opaqueIdSchema,
  machineId: opaqueIdSchema,
  reservedAt: epochMsSchema,
  targetIdempotencyKey: idempotencyKeySchema.optional(),
});

export const harnessDispatchSchema = z.discriminatedUnion("kind", [dispatchInputSchema, dispatchStopSchema]);
export type HarnessDispatch = z.infer<typeof harnessDispatchSchema>;

// ---- engine.records: engine-runner -> evidence-extractor -------------------------------------------------------

const engineRecordBody = z.discriminatedUnion("type", [
  /** A line the engine printed (or a transcript row), unmodified. */
  z.strictObject({ type: z.literal("inbound"), raw: z.string() }),
  /** A frame we wrote to the engine; `input` links it to the reservation it carries. */
  z.strictObject({
    type: z.literal("outbound"),
    raw: z.string(),
    input: z
      .strictObject({
        ...deviceInputRef,
        kind: z.enum(["input", "stop"]),
        text: z.string().optional(),
        mode: receiptInputSchema.shape.mode,
      })
      .optional(),
  }),
  /** Transcript-tail engines: an input handed over to whoever types it; the fingerprint window starts here. */
  z.strictObject({
    type: z.literal("handed_over"),
    ...deviceInputRef,
    text: z.string().min(1),
    mode: receiptInputSchema.shape.mode,
  }),
  /** The runner could not hand the input to the engine at all (proven not delivered); `code` is the receipt's. */
  z.strictObject({
    type: z.literal("undeliverable"),
    ...deviceInputRef,
    reason: nonEmpty,
    code: nonEmpty.optional(),
  }),
  /** A stop withdrew its device's inputs that were waiting in the runner, never written to the engine. */
  z.strictObject({
    type: z.literal("withdrawn"),
    stop: z.strictObject(deviceInputRef),
    inputs: z.array(z.strictObject(deviceInputRef)).min(1),
  }),
  z.strictObject({ type: z.literal("runtime_started"), pid: z.number().int().optional() }),
  z.strictObject({
    type: z.literal("runtime_exited"),
    code: z.number().int().nullable(),
    signal: z.string().nullable(),
  }),
]);

export const engineRecordSchema = z.strictObject({
  agentId: opaqueIdSchema,
  machineId: opaqueIdSchema,
  engine: engineKindSchema,
  /** App-owned id of one engine runtime (one process lifetime, or one followed session file). */
  runtimeId: opaqueIdSchema,
  /** Per-runtime sequence number, from 1, gap-free. */
  seq: z.number().int().positive(),
  receivedAt: epochMsSchema,
  record: engineRecordBody,
});
export type EngineRecord = z.infer<typeof engineRecordSchema>;

/** At most this many records go into one engine.records entry. */
export const ENGINE_RECORDS_PER_ENTRY = 64;

/**
 * One engine.records entry: the records of one runtime the runner appended in one write (what the engine printed
 * together), in seq order with no gap; `agentId` (theirs) places it on the agent's partition. Each record is still
 * one raw frame, untouched; an entry only saves the stream a write per frame.
 */
export const engineRecordEntrySchema = z
  .strictObject({
    agentId: opaqueIdSchema,
    records: z.array(engineRecordSchema).min(1).max(ENGINE_RECORDS_PER_ENTRY),
  })
  .refine(
    ({ agentId, records }) =>
      records.every(
        (record, index) =>
          record.agentId === agentId &&
          (index === 0 ||
            (record.runtimeId === records[0]?.runtimeId &&
              record.seq === (records[index - 1]?.seq ?? 0) + 1)),
      ),
    { message: "an entry holds one runtime's records of its agent, in seq order with no gap" },
  );

/** The entry of records appended together (one runtime's, in seq order). */
export function engineRecordEntry(records: readonly EngineRecord[]): EngineRecordEntry {
  return { agentId: records[0]?.agentId ?? "", records: [...records] };
}
export type EngineRecordEntry = z.infer<typeof engineRecordEntrySchema>;

// ---- harness.evidence: evidence-extractor -> result-producer ---------------------------------------------------

export const evidenceMemberSchema = z.strictObject({
  ...deviceInputRef,
  correlation: correlationKindSchema,
});

const evidenceBase = {
  agentId: opaqueIdSchema,
  machineId: opaqueIdSchema,
  runtimeId: opaqueIdSchema,
  /** Deterministic identity of this piece of evidence (same records in, same id out). */
  evidenceId: opaqueIdSchema,
  observedAt: epochMsSchema,
};

export const harnessEvidenceSchema = z.discriminatedUnion("kind", [
  /** The input was written to the engine (receipt -> delivered, input.phase submitted). */
  z.strictObject({
    kind: z.literal("input.delivered"),
    ...evidenceBase,
    ...deviceInputRef,
    mode: receiptInputSchema.shape.mode,
  }),
  /** The engine consumed the input into a turn (receipt -> started, input.phase accepted). */
  z.strictObject({
    kind: z.literal("input.consumed"),
    ...evidenceBase,
    ...deviceInputRef,
    correlation: correlationKindSchema,
    engineTurnRef: nonEmpty.optional(),
  }),
  /** A real completion boundary with the proven members (at least one). */
  z.strictObject({
    kind: z.literal("turn.completed"),
    ...evidenceBase,
    engineTurnId: nonEmpty.optional(),
    outcome: outcomeSchema,
    fullText: z.string(),
    members: z.array(evidenceMemberSchema).min(1),
  }),
  /** Membership cannot be proven: these inputs end `unknown` with the reason; nothing is guessed. */
  z.strictObject({
    kind: z.literal("evidence.missing"),
    ...evidenceBase,
    members: z.array(evidenceMemberSchema.omit({ correlation: true })).min(1),
    reason: z.enum([
      "RESULT_EVIDENCE_MISSING",
      "ENGINE_EXITED",
      "EVIDENCE_EVICTED",
      "OVERLAPPING_INPUTS",
      "REQUEST_NOT_RESUMABLE",
      // A record of the runtime was dead-lettered: what it proved about the open inputs is gone.
      "EVIDENCE_LOST",
    ]),
  }),
  /** Proven not delivered: the receipt becomes rejected with `code` (default INPUT_REJECTED). */
  z.strictObject({
    kind: z.literal("input.rejected"),
    ...evidenceBase,
    ...deviceInputRef,
    reason: nonEmpty,
    code: nonEmpty.optional(),
  }),
  /** The engine confirmed an interrupt requested by turn.stop (its own receipt completes). */
  z.strictObject({ kind: z.literal("stop.confirmed"), ...evidenceBase, ...deviceInputRef }),
]);
export type HarnessEvidence = z.infer<typeof harnessEvidenceSchema>;

// ---- os.routed: router -> run-resolver -------------------------------------------------------------------------

export const routedMemberSchema = z.strictObject({
  runId: opaqueIdSchema,
  deliveryId: opaqueIdSchema,
  idempotencyKey: idempotencyKeySchema,
});

export const osRoutedSchema = z.strictObject({
  deviceId: opaqueIdSchema,
  agentId: opaqueIdSchema,
  machineId: opaqueIdSchema.optional(),
  /** payload.serverInstanceId: the originating instance of the result and its receipts. */
  serverInstanceId: opaqueIdSchema,
  resultId: opaqueIdSchema,
  outcome: outcomeSchema,
  fullText: z.string().min(1),
  engineTurnId: nonEmpty.optional(),
  members: z.array(routedMemberSchema).min(1).max(64),
  /** Canonical SHA-256 of (serverInstanceId, resultId, outcome, fullText, members, engineTurnId). */
  contentHash: z.string().regex(/^[0-9a-f]{64}$/),
  source: z.strictObject({
    wireKind: z.enum(["turn.result", "turn.summary.correlated", "turn.summary.legacy"]),
    transportInstanceId: opaqueIdSchema,
    eventId: z.number().int().positive(),
  }),
  routedAt: epochMsSchema,
});
export type OsRouted = z.infer<typeof osRoutedSchema>;

// ---- os.resolved: run-resolver -> tts-dispatcher ---------------------------------------------------------------

export const osResolvedSchema = z.strictObject({
  deviceId: opaqueIdSchema,
  serverInstanceId: opaqueIdSchema,
  resultId: opaqueIdSchema,
  resolvedAt: epochMsSchema,
});
export type OsResolved = z.infer<typeof osResolvedSchema>;
