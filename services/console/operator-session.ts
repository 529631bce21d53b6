import type { FastifyReply, FastifyRequest } from "fastify";
import type { OperatorGate } from "../../libs/http/operator-gate.js";
import { osOperatorGate, type OsAuthenticator } from "../../libs/os-store/os-authenticator.js";

/** The console's session cookie: the operator's own OS token, HttpOnly and SameSite=Strict, sent only to this site. */
export const OPERATOR_COOKIE = "lampline_operator";

/** The credential a console request carries, and whether the browser attached it on its own (the cookie). */
export interface SessionCredential {
  authorization: string | undefined;
  viaCookie: boolean;
}

function cookieToken(header: string | undefined): string | undefined {
  for (const part of (header ?? "").split(";")) {
    const [name, ...value] = part.trim().split("=");
    if (name === OPERATOR_COOKIE && value.length > 0) return decodeURIComponent(value.join("="));
  }
  return undefined;
}

/** `Authorization: Bearer` first; otherwise the sign-in cookie. */
export function sessionCredential(request: FastifyRequest): SessionCredential {
  if (request.headers.authorization !== undefined)
    return { authorization: request.headers.authorization, viaCookie: false };
  const cookie = cookieToken(request.headers.cookie);
  return { authorization: cookie ? `Bearer ${cookie}` : undefined, viaCookie: cookie !== undefined };
}

/** OS operators by `Authorization: Bearer` or the console's cookie (libs/os-store/os-authenticator.ts). */
export function consoleOperatorGate(auth: OsAuthenticator): OperatorGate {
  return osOperatorGate(auth, (request) => sessionCredential(request).authorization);
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
