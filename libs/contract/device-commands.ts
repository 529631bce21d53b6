import { z } from "zod";
import { harnessErrorCodeSchema } from "./harness-wire.js";
import { epochMsSchema, opaqueIdSchema } from "./identifiers.js";
import { receiptSchema } from "./receipt.js";

/**
 * What the device-gateway asks the router to do with the Harness for one run. Entries live in the per-device
 * stream `B:commands` (field `payload`), written inside the same Lua step that registers or cancels the run.
 */
export const deviceCommandSchema = z.discriminatedUnion("kind", [
  z.strictObject({
    kind: z.literal("send"),
    runId: opaqueIdSchema,
    /** The gateway instance waiting for the receipt (its reply stream). */
    replyTo: opaqueIdSchema,
    at: epochMsSchema,
  }),
  z.strictObject({ kind: z.literal("stop"), runId: opaqueIdSchema, at: epochMsSchema }),
]);
export type DeviceCommand = z.infer<typeof deviceCommandSchema>;

/** The router's answer to a send: the Harness receipt, or the Harness error that refused the input. */
export const sendReplySchema = z.strictObject({
  deviceId: opaqueIdSchema,
  runId: opaqueIdSchema,
  receipt: receiptSchema.nullable(),
  error: z.strictObject({ code: harnessErrorCodeSchema, message: z.string() }).optional(),
});
export type SendReply = z.infer<typeof sendReplySchema>;
