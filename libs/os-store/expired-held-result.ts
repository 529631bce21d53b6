import { z } from "zod";
import { epochMsSchema } from "../contract/identifiers.js";
import { heldResultSchema, heldResultView } from "./held-result.js";

/** How many given-up held results each device keeps (`B:held-expired` is trimmed to exactly this many). */
export const EXPIRED_HELD_KEPT = 100;

/**
 * One entry of `B:held-expired`: a result the router held in `B:waiting` and gave up on because every run it names
 * ended before its receipts bound. The frame is kept as received, so an operator can still read the answer.
 * Written by the router, listed by the OS API (`GET /v1/held-results?state=expired`).
 */
export const expiredHeldResultSchema = z.strictObject({
  /** The `B:waiting` field it was held under (also the id of its rejection). */
  id: z.string().min(1),
  held: heldResultSchema,
  reason: z.literal("RECEIPTS_NEVER_BOUND"),
  expiredAt: epochMsSchema,
});
export type ExpiredHeldResult = z.infer<typeof expiredHeldResultSchema>;

/** The API's view: what the held view shows, plus the frame itself and when and why it was given up. */
export function expiredHeldResultView(expired: ExpiredHeldResult) {
  return {
    ...heldResultView(expired.id, expired.held),
    reason: expired.reason,
    expiredAt: new Date(expired.expiredAt).toISOString(),
    frame: expired.held.frame,
  };
}
