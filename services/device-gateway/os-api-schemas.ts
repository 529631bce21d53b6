import { z } from "zod";
import { replyRouteSchema } from "../../libs/contract/lamp-wire.js";
import { routedMemberSchema } from "../../libs/contract/pipeline-payloads.js";
import { receiptInputSchema } from "../../libs/contract/receipt.js";
import { outcomeSchema } from "../../libs/contract/turn-result.js";
import { runStateSchema } from "../../libs/os-store/run-record.js";
import {
  protocolErrorRecordSchema,
  rejectionRecordSchema,
  rejectionReasonSchema,
} from "../../libs/contract/os-audit-records.js";

/** The answers of the OS query API (docs/wire-protocol.md "OS query API"), as the OpenAPI document states them. */

const isoTime = z.string().describe("ISO-8601");

export const runViewSchema = z.object({
  runId: z.string(),
  requestId: z.string(),
  state: runStateSchema,
  outcome: outcomeSchema.nullable(),
  reason: z.string().nullable().describe("why the run ended unknown"),
  input: receiptInputSchema.nullable(),
  resultId: z.string().nullable(),
  idempotencyKey: z.string(),
  deliveryId: z.string().nullable(),
  serverInstanceId: z.string().nullable(),
  receiptState: z.string().nullable(),
  agentId: z.string(),
  machineId: z.string(),
  voiceTarget: z.object({ id: z.string(), expiresAt: isoTime.nullable() }),
  replyRoute: replyRouteSchema,
  cancelledAt: isoTime.nullable(),
  createdAt: isoTime.nullable(),
  resolvedAt: isoTime.nullable(),
});

export const runListSchema = z.object({ deviceId: z.string(), runs: z.array(runViewSchema) });

export const resultViewSchema = z.object({
  resultId: z.string(),
  deviceId: z.string(),
  serverInstanceId: z.string(),
  agentId: z.string(),
  outcome: outcomeSchema,
  fullText: z.string(),
  speechText: z.string().nullable(),
  engineTurnId: z.string().nullable(),
  members: z.array(routedMemberSchema),
  storedAt: isoTime,
  playback: z
    .looseObject({ state: z.string(), reason: z.string().nullable() })
    .nullable()
    .describe("the outbox entry (state, reason, playbackId, one <state>At per transition), or null"),
});

const heldResultViewSchema = z.object({
  id: z.string(),
  kind: z.string(),
  agentId: z.string(),
  transportInstanceId: z.string(),
  eventId: z.number().int(),
  resultId: z.string().nullable(),
  serverInstanceId: z.string().nullable(),
  idempotencyKeys: z.array(z.string()),
  heldAt: isoTime,
  reason: rejectionReasonSchema.optional().describe("state=expired only"),
  expiredAt: isoTime.optional().describe("state=expired only"),
  frame: z.record(z.string(), z.unknown()).optional().describe("state=expired only"),
});

export const heldResultListSchema = z.object({
  deviceId: z.string(),
  heldResults: z.array(heldResultViewSchema),
});

export const rejectionListSchema = z.object({
  deviceId: z.string(),
  rejections: z.array(rejectionRecordSchema.extend({ id: z.string() })),
});

export const protocolErrorListSchema = z.object({
  deviceId: z.string(),
  protocolErrors: z.array(protocolErrorRecordSchema.extend({ id: z.string() })),
});

export const revokedLampSchema = z.object({ deviceId: z.string(), revokedAt: isoTime });
