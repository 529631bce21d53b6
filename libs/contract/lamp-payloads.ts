import { z } from "zod";
import { epochMsSchema, opaqueIdSchema, requestIdSchema } from "./identifiers.js";
import { playbackAckStateSchema, playbackStartSchema } from "./lamp-wire.js";

/** The payloads of the Lamp streams and of the `lamp-playback` queue (see `catalog.ts` for what flows where). */

/** `os.lamp_delivery.<gatewayId>`: a `playback.start` for a device whose socket that gateway instance holds. */
export const lampDeliverySchema = z.strictObject({
  deviceId: opaqueIdSchema,
  frame: playbackStartSchema,
  sentAt: epochMsSchema,
});
export type LampDelivery = z.infer<typeof lampDeliverySchema>;

/** `os.lamp_events`: what the Lamp says about playback, forwarded by its gateway. */
export const lampEventSchema = z.discriminatedUnion("kind", [
  z.strictObject({
    kind: z.literal("playback.ack"),
    deviceId: opaqueIdSchema,
    playbackId: opaqueIdSchema,
    state: playbackAckStateSchema,
    at: epochMsSchema,
  }),
  /** "Say that again": a new, explicit playback of a stored result the device owns. */
  z.strictObject({
    kind: z.literal("playback.repeat"),
    deviceId: opaqueIdSchema,
    requestId: requestIdSchema,
    playbackId: opaqueIdSchema,
    resultId: opaqueIdSchema,
    /** Named by the Lamp in its request; absent: the voice target of the device's latest run. */
    voiceTargetId: opaqueIdSchema.optional(),
    at: epochMsSchema,
  }),
  /** A Lamp socket of the device opened: playbacks waiting for the Lamp may be sent now. */
  z.strictObject({
    kind: z.literal("lamp.connected"),
    deviceId: opaqueIdSchema,
    gatewayId: opaqueIdSchema,
    at: epochMsSchema,
  }),
]);
export type LampEvent = z.infer<typeof lampEventSchema>;

/** One job of the BullMQ queue `lamp-playback`: the playback to send, by identity. */
export const playbackJobSchema = z.strictObject({
  deviceId: z.string().min(1),
  playbackId: z.string().min(1),
});
export type PlaybackJob = z.infer<typeof playbackJobSchema>;
