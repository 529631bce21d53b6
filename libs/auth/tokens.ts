import { decodeJwt, jwtVerify, SignJWT } from "jose";
import { z } from "zod";

/** Device ids come only from a verified credential; this shape keeps them safe inside Redis key hash tags. */
export const deviceIdSchema = z.string().regex(/^[A-Za-z0-9_.@-]{1,128}$/);

/**
 * The surface a token opens (JWT `aud`): `os` for the Lamp socket and the OS API (signed with AUTH_JWT_SECRET),
 * `harness` for Harness peers and the Harness admin route (signed with HARNESS_JWT_SECRET). A token opens one
 * surface only, even when an operator configures both secrets alike.
 */
export const audienceSchema = z.enum(["os", "harness"]);
export type Audience = z.infer<typeof audienceSchema>;

/** Who may hold a token of each audience: a Lamp or an operator at the OS, the OS (for one device) or an operator at the Harness. */
export const ROLES = { os: ["device", "operator"], harness: ["os", "operator"] } as const;
export type Role<A extends Audience = Audience> = (typeof ROLES)[A][number];

export interface Principal {
  /** The token's `sub`: the device, or the operator's name for an operator token. */
  deviceId: string;
  role: Role;
  audience: Audience;
}

export class AuthError extends Error {
  readonly code = "UNAUTHORIZED";
}

const keyOf = (secret: string) => new TextEncoder().encode(secret);

export type TokenClaims = {
  [A in Audience]: { audience: A; sub: string; role: Role<A>; expiresInSeconds?: number };
}[Audience];

export async function signToken(secret: string, claims: TokenClaims): Promise<string> {
  const expiresAt = Math.floor(Date.now() / 1000) + (claims.expiresInSeconds ?? 24 * 3600);
  return new SignJWT({ role: claims.role })
    .setProtectedHeader({ alg: "HS256", typ: "JWT" })
    .setAudience(claims.audience)
    .setSubject(claims.sub)
    .setIssuedAt()
    .setExpirationTime(expiresAt)
    .sign(keyOf(secret));
}

/** The longest lifetime a token of each audience may claim unless its surface is configured otherwise: 30 days. */
export const DEFAULT_MAX_TOKEN_LIFETIME_SECONDS = 30 * 86_400;

/**
 * How far in the future a token's `iat` may lie (clock skew between signer and verifier). A later `iat` is refused:
 * revocation compares `iat` with the revocation time, so a token dated ahead would otherwise outlive it.
 */
export const MAX_ISSUED_AT_SKEW_SECONDS = 30;

/**
 * The audience is checked first, so a token for the other surface (or one without `aud`) is refused with a message
 * that says so, whatever its signature; then HS256 signature, expiry, claim shape and lifetime (`exp - iat`, or
 * `exp - now` without `iat`, at most `maxLifetimeSeconds`; `iat` at most MAX_ISSUED_AT_SKEW_SECONDS ahead). Any
 * failure is an AuthError.
 */
export async function verifyToken(
  secret: string,
  token: string,
  audience: Audience,
  maxLifetimeSeconds = DEFAULT_MAX_TOKEN_LIFETIME_SECONDS,
): Promise<Principal> {
  assertAudience(token, audience);
  let claims: { sub: string; role: Role; exp: number; iat?: number };
  try {
    const { payload } = await jwtVerify(token, keyOf(secret), { algorithms: ["HS256"], audience });
    claims = z
      .object({
        sub: deviceIdSchema,
        role: z.enum(ROLES[audience]),
        exp: z.number(),
        iat: z.number().optional(),
      })
      .parse(payload);
  } catch (error) {
    throw new AuthError(error instanceof Error ? error.message : "invalid token");
  }
  assertLifetime(claims, maxLifetimeSeconds);
  return { deviceId: claims.sub, role: claims.role, audience };
}

function assertLifetime({ exp, iat }: { exp: number; iat?: number }, maxLifetimeSeconds: number): void {
  const now = Math.floor(Date.now() / 1000);
  if (iat !== undefined && iat > now + MAX_ISSUED_AT_SKEW_SECONDS)
    throw new AuthError("token issued in the future (iat)");
  if (exp - (iat ?? now) > maxLifetimeSeconds)
    throw new AuthError(`token lifetime exceeds this surface's maximum of ${maxLifetimeSeconds} s`);
}

function assertAudience(token: string, audience: Audience): void {
  let aud: unknown;
  try {
    aud = decodeJwt(token).aud;
  } catch {
    throw new AuthError("malformed token");
  }
  if (aud === undefined)
    throw new AuthError(`token has no audience (aud); this surface accepts "${audience}"`);
  if (aud !== audience)
    throw new AuthError(
      `token audience ${JSON.stringify(aud)} is not accepted here; this surface accepts "${audience}"`,
    );
}

/**
 * Whether a device's revocation (epoch ms, if any) covers a token issued at `issuedAtSeconds` (JWT `iat`; a token
 * without one counts as issued at the epoch). `iat` has second resolution, so a token from the revocation's own
 * second is covered too. Both gateways apply this rule; verifyToken has already refused an `iat` dated ahead.
 */
export function issuedBeforeRevocation(issuedAtSeconds: number, revokedAtMs: number | undefined): boolean {
  return revokedAtMs !== undefined && issuedAtSeconds <= Math.floor(revokedAtMs / 1000);
}

export function bearerToken(header: string | undefined): string | undefined {
  const match = /^Bearer\s+(\S+)$/i.exec(header ?? "");
  return match?.[1];
}
