import type { FastifyReply, FastifyRequest } from "fastify";
import type { OperatorGate } from "../../../libs/http/operator-gate.js";
import type { LampAuthenticator } from "../principal.js";

/** The console's session cookie: the operator's own OS token, HttpOnly and SameSite=Strict, sent only to this site. */
export const OPERATOR_COOKIE = "lampline_operator";

function cookieToken(header: string | undefined): string | undefined {
  for (const part of (header ?? "").split(";")) {
    const [name, ...value] = part.trim().split("=");
    if (name === OPERATOR_COOKIE && value.length > 0) return decodeURIComponent(value.join("="));
  }
  return undefined;
}

/**
 * OS operators (aud `os`, role `operator`, AUTH_JWT_SECRET, checked against revocations like every OS token), by
 * `Authorization: Bearer` or the console's cookie: 401 without a valid OS token, 403 FORBIDDEN for a device token.
 */
export function osOperatorGate(auth: LampAuthenticator): OperatorGate {
  return async (request) => {
    const cookie = cookieToken(request.headers.cookie);
    const authorization = request.headers.authorization ?? (cookie ? `Bearer ${cookie}` : undefined);
    const authentication = await auth.authenticateAuthorization(authorization);
    if (!authentication.ok)
      return { admitted: false, status: 401, code: authentication.code, message: authentication.message };
    if (authentication.principal.role !== "operator")
      return { admitted: false, status: 403, code: "FORBIDDEN", message: "operator role required" };
    return { admitted: true, operator: authentication.principal.deviceId };
  };
}

/** Keeps the token in the cookie until the token's own expiry. */
export function setOperatorCookie(
  request: FastifyRequest,
  reply: FastifyReply,
  token: string,
  expiresAt: number,
): void {
  const maxAge = Math.max(0, Math.floor(expiresAt - Date.now() / 1000));
  const secure = request.protocol === "https" ? "; Secure" : "";
  reply.header(
    "set-cookie",
    `${OPERATOR_COOKIE}=${encodeURIComponent(token)}; Path=/; HttpOnly; SameSite=Strict; Max-Age=${maxAge}${secure}`,
  );
}

export function clearOperatorCookie(reply: FastifyReply): void {
  reply.header("set-cookie", `${OPERATOR_COOKIE}=; Path=/; HttpOnly; SameSite=Strict; Max-Age=0`);
}
