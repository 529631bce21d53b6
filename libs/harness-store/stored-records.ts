import { z } from "zod";
import { eventKindSchema } from "../contract/harness-wire.js";
import { nonEmpty } from "../contract/identifiers.js";
import { receiptSchema } from "../contract/receipt.js";
import { outcomeSchema } from "../contract/turn-result.js";

/**
 * A device event-log entry. Results are stored by reference: their wire form is chosen per connection at send. A
 * receipt.updated is stored as its receipt alone: the event's agent, machine and key are the receipt's own.
 */
export const storedEventSchema = z.discriminatedUnion("kind", [
  z.object({ kind: z.literal("receipt.updated"), receipt: receiptSchema, at: z.number() }),
  z.object({
    kind: eventKindSchema.exclude(["turn.result", "turn.summary", "receipt.updated"]),
    agentId: nonEmpty,
    machineId: nonEmpty,
    payload: z.record(z.string(), z.unknown()),
    at: z.number(),
  }),
  z.object({ kind: z.literal("result"), resultId: nonEmpty, at: z.number() }),
]);
export type StoredEvent = z.infer<typeof storedEventSchema>;

/** The immutable result as stored: `payload` holds the canonical bytes, serialized once. */
export const storedResultSchema = z.object({
  resultId: nonEmpty,
  payload: nonEmpty,
  agentId: nonEmpty,
  machineId: nonEmpty,
  outcome: outcomeSchema,
  scope: z.enum(["input", "group"]),
  /** Single-input results: the member's key and its receipt's turnId (for the summary profiles). */
  singleKey: z.string(),
  singleTurnId: z.string(),
  storedAt: z.coerce.number(),
});
export type StoredResult = z.infer<typeof storedResultSchema>;
