import type { FastifyReply, FastifyRequest } from "fastify";

/** What an operator-only surface decided about a request's credential. */
export type OperatorVerdict =
  | { admitted: true; operator: string }
  | { admitted: false; status: 401 | 403; code: string; message: string };

/** Checks a request's credential for one audience's operators (each gateway verifies its own tokens). */
export type OperatorGate = (request: FastifyRequest) => Promise<OperatorVerdict>;

/**
 * Admits a request any of the gates admits. Otherwise the most telling refusal answers: 403 when some gate knew the
 * caller but not as an operator (a device token), else the first gate's 401.
 */
export function anyOperatorGate(gates: readonly OperatorGate[]): OperatorGate {
  return async (request) => {
    const refusals: Exclude<OperatorVerdict, { admitted: true }>[] = [];
    for (const gate of gates) {
      const verdict = await gate(request);
      if (verdict.admitted) return verdict;
      refusals.push(verdict);
    }
    return (
      refusals.find((refusal) => refusal.status === 403) ??
      refusals[0] ?? { admitted: false, status: 401, code: "UNAUTHORIZED", message: "no operator gate" }
    );
  };
}

/** An `onRequest` hook that answers a refused request with the API error shape and lets an admitted one through. */
export function refuseNonOperators(gate: OperatorGate) {
  return async (request: FastifyRequest, reply: FastifyReply) => {
    const verdict = await gate(request);
    if (verdict.admitted) return;
    return reply.code(verdict.status).send({ error: { code: verdict.code, message: verdict.message } });
  };
}
