import { z } from "zod";
import { epochMsSchema, idempotencyKeySchema, nonEmpty } from "./identifiers.js";

export const receiptStateSchema = z.enum([
  "queued",
  "delivered",
  "started",
  "completed",
  "rejected",
  "unknown",
]);

/** `receipt.input` (openharness input.status.v1): how an input was handed to the engine and how far it got. */
export const receiptInputSchema = z.object({
  mode: z.enum(["direct", "steering", "native_queue", "native_input", "daemon_queue"]),
  phase: z.enum([
    "waiting_for_writer",
    "waiting_for_user",
    "waiting_for_turn",
    "submitted",
    "accepted",
    "unconfirmed",
  ]),
});
export type ReceiptInput = z.infer<typeof receiptInputSchema>;

export const receiptErrorSchema = z.object({ code: nonEmpty, message: z.string() });

/**
 * The Harness's durable record of one input, keyed (deviceId, idempotencyKey). Peers must tolerate fields added
 * later, so this schema keeps unknown fields instead of rejecting them.
 */
export const receiptSchema = z.looseObject({
  idempotencyKey: idempotencyKeySchema,
  deliveryId: nonEmpty,
  operation: z.enum(["turn.send", "turn.stop"]),
  state: receiptStateSchema,
  machineId: nonEmpty,
  agentId: nonEmpty,
  serverInstanceId: nonEmpty,
  turnId: nonEmpty.nullable(),
  error: receiptErrorSchema.nullable(),
  at: epochMsSchema,
  input: receiptInputSchema.optional(),
});
export type Receipt = z.infer<typeof receiptSchema>;
