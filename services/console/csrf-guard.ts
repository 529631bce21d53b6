import { createHmac, timingSafeEqual } from "node:crypto";
import type { FastifyReply, FastifyRequest } from "fastify";
import type { Counter } from "prom-client";
import { z } from "zod";
import { bearerToken } from "../../libs/auth/tokens.js";
import { sessionCredential, type SessionCredential } from "./operator-session.js";

/** The form field and the header a state-changing console request carries its CSRF token in. */
export const CSRF_FIELD = "csrf";
export const CSRF_HEADER = "x-csrf-token";

export type CsrfRefusal = "cross_origin" | "missing_origin" | "csrf_token";

/** What the guard reads of a request. */
export type GuardedRequest = Pick<FastifyRequest, "headers" | "body">;

const formTokenSchema = z.object({ [CSRF_FIELD]: z.string().max(256) });

/**
 * Cross-site request forgery defence for the console's state-changing routes. The browser attaches the session
 * cookie on its own, so a request that rides on it must come from a page of this origin and carry the token only
 * the console's own pages hold: an HMAC of the session's token under a key derived from AUTH_JWT_SECRET, so every
 * replica agrees and it dies with the session. A request with its own `Authorization` header cannot be forged
 * from another page (that header needs CORS, which no route grants), so it passes the origin check only.
 */
export class CsrfGuard {
  private readonly key: Buffer;

  constructor(secret: string) {
    this.key = createHmac("sha256", secret).update("lampline console csrf").digest();
  }

  /** The token the console's pages put in their forms for this session. */
  tokenFor(credential: SessionCredential): string {
    const token = bearerToken(credential.authorization) ?? "";
    return createHmac("sha256", this.key).update(token).digest("base64url");
  }

  refusalOf(request: GuardedRequest, credential: SessionCredential): CsrfRefusal | undefined {
    const refusal = this.originRefusalOf(request, credential.viaCookie);
    if (refusal || !credential.viaCookie) return refusal;
    return this.carriesToken(request, credential) ? undefined : "csrf_token";
  }

  /**
   * Whether the request comes from a page of this origin: `Sec-Fetch-Site`, which browsers set and pages cannot,
   * must say `same-origin` (a page of the same site on another port, which SameSite lets the cookie reach, is
   * `same-site`), and a named `Origin` must be the request's own Host. Under `Referrer-Policy: no-referrer` a
   * browser sends `Origin: null` with every form post, so then `Sec-Fetch-Site` alone vouches. A request with
   * neither is no browser's: refused on the cookie, let through with its own credential (curl). The sign-in form
   * uses this check alone (there is no session yet to bind a token to).
   */
  originRefusalOf(request: GuardedRequest, viaCookie: boolean): CsrfRefusal | undefined {
    const site = request.headers["sec-fetch-site"];
    const origin = request.headers.origin;
    if (site !== undefined && site !== "same-origin") return "cross_origin";
    if (origin !== undefined && origin !== "null")
      return hostOf(origin) === request.headers.host ? undefined : "cross_origin";
    if (site === "same-origin") return undefined;
    if (origin === "null") return "cross_origin";
    return viaCookie ? "missing_origin" : undefined;
  }

  private carriesToken(request: GuardedRequest, credential: SessionCredential): boolean {
    const header = request.headers[CSRF_HEADER];
    const form = formTokenSchema.safeParse(request.body);
    const sent = typeof header === "string" ? header : form.success ? form.data[CSRF_FIELD] : "";
    const expected = Buffer.from(this.tokenFor(credential));
    const given = Buffer.from(sent);
    return given.length === expected.length && timingSafeEqual(given, expected);
  }
}

const REFUSAL_MESSAGES: Record<CsrfRefusal, string> = {
  cross_origin: "request from another origin",
  missing_origin: "a request on the session cookie must name its Origin",
  csrf_token: "missing or wrong CSRF token",
};

/** A forged request's answer: 403 FORBIDDEN with the reason, counted; nothing else happens. */
export function refuseForgery(reply: FastifyReply, refusals: Counter<"reason">, refusal: CsrfRefusal) {
  refusals.inc({ reason: refusal });
  return reply.code(403).send({ error: { code: "FORBIDDEN", message: REFUSAL_MESSAGES[refusal] } });
}

/** A hook for the routes behind the gate: state-changing requests must pass the guard; reads are not checked. */
export function guardStateChanges(guard: CsrfGuard, refusals: Counter<"reason">) {
  return async (request: FastifyRequest, reply: FastifyReply) => {
    if (request.method === "GET" || request.method === "HEAD") return;
    const refusal = guard.refusalOf(request, sessionCredential(request));
    if (refusal) return refuseForgery(reply, refusals, refusal);
  };
}

/** The `host[:port]` of an Origin header; `null` and anything unparsable has none. */
function hostOf(origin: string): string | undefined {
  try {
    return new URL(origin).host;
  } catch {
    return undefined;
  }
}
