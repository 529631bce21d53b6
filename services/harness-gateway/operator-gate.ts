import { AuthError, bearerToken, verifyToken } from "../../libs/auth/tokens.js";
import type { OperatorGate } from "../../libs/http/operator-gate.js";

/**
 * Harness operators (aud `harness`, role `operator`, HARNESS_JWT_SECRET): 401 without a valid Harness token, 403
 * FORBIDDEN for an OS peer token. The admin route and the API docs of the harness-gateway are behind it.
 */
export function harnessOperatorGate(secret: string, maxLifetimeSeconds: number): OperatorGate {
  return async (request) => {
    const token = bearerToken(request.headers.authorization);
    if (!token)
      return { admitted: false, status: 401, code: "UNAUTHORIZED", message: "missing bearer token" };
    try {
      const principal = await verifyToken(secret, token, "harness", maxLifetimeSeconds);
      if (principal.role === "operator") return { admitted: true, operator: principal.deviceId };
      return { admitted: false, status: 403, code: "FORBIDDEN", message: "operator role required" };
    } catch (error) {
      const message = error instanceof AuthError ? error.message : "invalid token";
      return { admitted: false, status: 401, code: "UNAUTHORIZED", message };
    }
  };
}
