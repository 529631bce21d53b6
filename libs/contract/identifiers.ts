import { z } from "zod";

export const IDEMPOTENCY_KEY_PATTERN = /^[A-Za-z0-9_-]{1,64}$/;

/** Device-minted key of one input: `[A-Za-z0-9_-]{1,64}`. */
export const idempotencyKeySchema = z
  .string()
  .regex(IDEMPOTENCY_KEY_PATTERN, "must match [A-Za-z0-9_-]{1,64}");

/** Request ids on both wires are UUIDs. */
export const requestIdSchema = z.uuid();

export const nonEmpty = z.string().min(1);

/** Ids we mint or receive from peers (agent, machine, delivery, result...): bounded, printable, non-empty. */
export const opaqueIdSchema = z.string().min(1).max(256);

export const epochMsSchema = z.number().int().nonnegative();

/** UTF-8 byte length (limits on the wire are bytes, not UTF-16 code units). */
export const utf8Bytes = (text: string) => Buffer.byteLength(text, "utf8");
