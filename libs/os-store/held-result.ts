import { z } from "zod";

/**
 * A result the router holds in `B:waiting` until its members' receipts bind: the frame exactly as received, where
 * it came from on the transport, and when it was first held. Written by the router, listed by the OS API.
 */
export const heldResultSchema = z.strictObject({
  frame: z.record(z.string(), z.unknown()),
  origin: z.strictObject({
    transportInstanceId: z.string(),
    eventId: z.number().int(),
    agentId: z.string(),
    machineId: z.string().optional(),
    kind: z.string(),
  }),
  heldAt: z.number().int().nonnegative(),
});
export type HeldResult = z.infer<typeof heldResultSchema>;

/** What the held frame says about itself; a legacy summary names its key outside any correlation. */
const heldClaimSchema = z.looseObject({
  idempotencyKey: z.string().optional(),
  payload: z.looseObject({
    resultId: z.string().optional(),
    serverInstanceId: z.string().optional(),
    idempotencyKey: z.string().optional(),
    correlation: z.looseObject({ inputs: z.array(z.looseObject({ idempotencyKey: z.string() })) }).optional(),
  }),
});

/** The API's view of a held result: which result it is and the keys whose receipts it is waiting for. */
export function heldResultView(id: string, held: HeldResult) {
  const claim = heldClaimSchema.safeParse(held.frame);
  const payload = claim.success ? claim.data.payload : undefined;
  const memberKeys = payload?.correlation?.inputs.map((input) => input.idempotencyKey);
  const legacyKey = payload?.idempotencyKey ?? (claim.success ? claim.data.idempotencyKey : undefined);
  return {
    id,
    kind: held.origin.kind,
    agentId: held.origin.agentId,
    transportInstanceId: held.origin.transportInstanceId,
    eventId: held.origin.eventId,
    resultId: payload?.resultId ?? null,
    serverInstanceId: payload?.serverInstanceId ?? null,
    idempotencyKeys: memberKeys ?? (legacyKey === undefined ? [] : [legacyKey]),
    heldAt: new Date(held.heldAt).toISOString(),
  };
}
