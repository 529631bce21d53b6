import { createHmac } from "node:crypto";
import fc from "fast-check";

const base64url = (value: string | Buffer) => Buffer.from(value).toString("base64url");

/** A JWT built by hand, so the header, the claims and the signature can each be wrong on purpose. */
export function forgeJwt(
  header: Record<string, unknown>,
  claims: Record<string, unknown>,
  secret: string | undefined,
  hmac: "sha256" | "sha512" = "sha256",
): string {
  const signingInput = `${base64url(JSON.stringify(header))}.${base64url(JSON.stringify(claims))}`;
  const signature =
    secret === undefined ? "" : createHmac(hmac, secret).update(signingInput).digest("base64url");
  return `${signingInput}.${signature}`;
}

const now = () => Math.floor(Date.now() / 1000);
/** 2100-01-01T00:00:00Z: an `exp` no surface's maximum lifetime allows. */
const YEAR_2100 = 4_102_444_800;
const HS256 = { alg: "HS256", typ: "JWT" };

/** The expected answer: accepted, or refused with 401 and this code. */
export type AuthVerdict = "accept" | "UNAUTHORIZED" | "REVOKED";

export interface AuthCase {
  name: string;
  /** The Authorization header sent (absent when undefined). */
  authorization: string | undefined;
  /** Set on a valid operator credential of the surface (peer routes refuse it). */
  role?: "operator";
  verdict: AuthVerdict;
}

/** What a surface's valid peer credential is made of: the secret, the audience and the role it carries. */
export interface SurfaceCredentials {
  secret: string;
  audience: "os" | "harness";
  role: "device" | "os";
}

/** A revoked device's tokens, issued before its revocation: one for this surface and one for the other. */
export interface RevokedTokens {
  deviceId: string;
  token: string;
  otherSurfaceToken: string;
}

const DEVICE_ID = /^[A-Za-z0-9_.@-]{1,128}$/;

/**
 * Credentials a hostile client presents at one surface: forged signatures, expired or not-yet-valid tokens, tokens
 * beyond the surface's maximum lifetime or dated ahead (a revoked device's included), `none`
 * and RS256/HS512 headers, missing or malformed claims, no, wrong or several audiences, the other surface's tokens
 * and roles, broken encodings and header syntax, and valid ones for contrast.
 */
export function authCases(
  own: SurfaceCredentials,
  other: SurfaceCredentials,
  device: string,
  revoked: RevokedTokens,
) {
  const { secret } = own;
  const claims = (extra: Record<string, unknown> = {}) => ({
    sub: device,
    role: own.role,
    aud: own.audience,
    iat: now(),
    exp: now() + 600,
    ...extra,
  });
  const { aud: _dropped, ...withoutAud } = claims();
  const otherSurfaceToken = forgeJwt(
    HS256,
    { ...claims(), role: other.role, aud: other.audience },
    other.secret,
  );
  const bearer = (token: string) => `Bearer ${token}`;
  const refused = (name: string, token: string): AuthCase => ({
    name,
    authorization: bearer(token),
    verdict: "UNAUTHORIZED",
  });
  const fixed: fc.Arbitrary<() => AuthCase> = fc.constantFrom<() => AuthCase>(
    () => ({ name: "valid", authorization: bearer(forgeJwt(HS256, claims(), secret)), verdict: "accept" }),
    () => ({
      name: "valid_operator",
      authorization: bearer(forgeJwt(HS256, claims({ role: "operator" }), secret)),
      role: "operator",
      verdict: "accept",
    }),
    () => ({
      name: "valid_lowercase_scheme",
      authorization: `bearer ${forgeJwt(HS256, claims(), secret)}`,
      verdict: "accept",
    }),
    () => refused("wrong_secret", forgeJwt(HS256, claims(), `${secret}-not`)),
    () => refused("expired", forgeJwt(HS256, claims({ exp: now() - 5 }), secret)),
    () => refused("not_yet_valid", forgeJwt(HS256, claims({ nbf: now() + 600 }), secret)),
    () => refused("alg_none", forgeJwt({ alg: "none", typ: "JWT" }, claims(), undefined)),
    () => refused("alg_none_signed", forgeJwt({ alg: "none" }, claims(), secret)),
    () => refused("alg_rs256_header", forgeJwt({ alg: "RS256", typ: "JWT" }, claims(), secret)),
    () => refused("alg_hs512", forgeJwt({ alg: "HS512", typ: "JWT" }, claims(), secret, "sha512")),
    () =>
      refused("crit_header", forgeJwt({ ...HS256, crit: ["x-unknown"], "x-unknown": 1 }, claims(), secret)),
    () =>
      refused(
        "missing_sub",
        forgeJwt(HS256, { role: own.role, aud: own.audience, iat: now(), exp: now() + 600 }, secret),
      ),
    () =>
      refused(
        "missing_exp",
        forgeJwt(HS256, { sub: device, role: own.role, aud: own.audience, iat: now() }, secret),
      ),
    () => refused("missing_aud", forgeJwt(HS256, withoutAud, secret)),
    () => refused("wrong_aud", forgeJwt(HS256, claims({ aud: other.audience }), secret)),
    () => refused("aud_both", forgeJwt(HS256, claims({ aud: [own.audience, other.audience] }), secret)),
    () => refused("aud_unknown", forgeJwt(HS256, claims({ aud: "admin" }), secret)),
    () => refused("other_surface_token", otherSurfaceToken),
    () => refused("other_surface_secret", forgeJwt(HS256, claims(), other.secret)),
    () => refused("other_surface_role", forgeJwt(HS256, claims({ role: other.role }), secret)),
    () => refused("revoked_other_surface_token", revoked.otherSurfaceToken),
    () => refused("exp_string", forgeJwt(HS256, claims({ exp: "tomorrow" }), secret)),
    () => refused("role_admin", forgeJwt(HS256, claims({ role: "admin" }), secret)),
    () => refused("sub_number", forgeJwt(HS256, claims({ sub: 42 }), secret)),
    () => refused("sub_hash_tag", forgeJwt(HS256, claims({ sub: "lamp}:{d:other" }), secret)),
    () => refused("sub_too_long", forgeJwt(HS256, claims({ sub: "d".repeat(129) }), secret)),
    () =>
      refused("tampered_claims", tamper(forgeJwt(HS256, claims(), secret), claims({ sub: "lamp-other" }))),
    () => refused("two_parts", forgeJwt(HS256, claims(), secret).split(".").slice(0, 2).join(".")),
    () => refused("four_parts", `${forgeJwt(HS256, claims(), secret)}.x`),
    () => refused("header_not_json", `${base64url("{nope")}.${base64url(JSON.stringify(claims()))}.sig`),
    () => refused("claims_not_json", `${base64url(JSON.stringify(HS256))}.${base64url("[1,")}.sig`),
    () => ({ name: "no_header", authorization: undefined, verdict: "UNAUTHORIZED" }),
    () => ({ name: "bearer_only", authorization: "Bearer", verdict: "UNAUTHORIZED" }),
    () => ({
      name: "basic_scheme",
      authorization: `Basic ${base64url("user:pass")}`,
      verdict: "UNAUTHORIZED",
    }),
    () => ({
      name: "trailing_garbage",
      authorization: `${bearer(forgeJwt(HS256, claims(), secret))} extra`,
      verdict: "UNAUTHORIZED",
    }),
    () => ({ name: "huge_header", authorization: bearer("a".repeat(12_000)), verdict: "UNAUTHORIZED" }),
    () => ({ name: "revoked", authorization: bearer(revoked.token), verdict: "REVOKED" }),
    () =>
      refused(
        "revoked_future_iat",
        forgeJwt(HS256, claims({ sub: revoked.deviceId, iat: now() + 3600, exp: now() + 4200 }), secret),
      ),
    () => {
      const { iat: _none, ...withoutIat } = claims({ sub: revoked.deviceId });
      return {
        name: "revoked_no_iat",
        authorization: bearer(forgeJwt(HS256, withoutIat, secret)),
        verdict: "REVOKED",
      };
    },
    () => refused("exp_2100", forgeJwt(HS256, claims({ exp: YEAR_2100 }), secret)),
    () => {
      const { iat: _none, ...withoutIat } = claims({ exp: now() + 31 * 86_400 });
      return refused("no_iat_beyond_max_lifetime", forgeJwt(HS256, withoutIat, secret));
    },
    () => refused("iat_ahead", forgeJwt(HS256, claims({ iat: now() + 600, exp: now() + 1200 }), secret)),
    () => ({
      name: "iat_within_skew",
      authorization: bearer(forgeJwt(HS256, claims({ iat: now() + 10 }), secret)),
      verdict: "accept",
    }),
  );
  const generatedSub = fc.string({ unit: "grapheme", minLength: 0, maxLength: 140 }).map((sub): AuthCase => ({
    name: DEVICE_ID.test(sub) ? "generated_sub_valid" : "generated_sub_invalid",
    authorization: bearer(forgeJwt(HS256, claims({ sub }), secret)),
    verdict: DEVICE_ID.test(sub) ? "accept" : "UNAUTHORIZED",
  }));
  const garbage = fc.string({ minLength: 1, maxLength: 200 }).map((text): AuthCase => ({
    name: "garbage_token",
    authorization: `Bearer ${encodeURIComponent(text)}`,
    verdict: "UNAUTHORIZED",
  }));
  return fc.oneof(
    { arbitrary: fixed.map((make) => make()), weight: 6 },
    { arbitrary: generatedSub, weight: 2 },
    { arbitrary: garbage, weight: 1 },
  );
}

/** Replaces the claims of a signed token and keeps its signature (which then no longer matches). */
function tamper(token: string, claims: Record<string, unknown>): string {
  const [header, , signature] = token.split(".");
  return `${header}.${base64url(JSON.stringify(claims))}.${signature}`;
}
