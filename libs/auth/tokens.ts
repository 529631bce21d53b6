import { jwtVerify, SignJWT } from "jose";
import { z } from "zod";

/** Device ids come only from a verified credential; this shape keeps them safe inside Redis key hash tags. */
export const deviceIdSchema = z.string().regex(/^[A-Za-z0-9_.@-]{1,128}$/);

export const roleSchema = z.enum(["device", "operator"]);

export interface Principal {
  deviceId: string;
  role: z.infer<typeof roleSchema>;
}

export class AuthError extends Error {
  readonly code = "UNAUTHORIZED";
}

const claimsSchema = z.object({ sub: deviceIdSchema, role: roleSchema.default("device"), exp: z.number() });

const keyOf = (secret: string) => new TextEncoder().encode(secret);

export async function signToken(
  secret: string,
  claims: { sub: string; role?: Principal["role"]; expiresInSeconds?: number },
): Promise<string> {
  const expiresAt = Math.floor(Date.now() / 1000) + (claims.expiresInSeconds ?? 24 * 3600);
  return new SignJWT({ role: claims.role ?? "device" })
    .setProtectedHeader({ alg: "HS256", typ: "JWT" })
    .setSubject(claims.sub)
    .setIssuedAt()
    .setExpirationTime(expiresAt)
    .sign(keyOf(secret));
}

/** HS256 signature, expiry and claim shape are all checked; any failure is an AuthError. */
export async function verifyToken(secret: string, token: string): Promise<Principal> {
  try {
    const { payload } = await jwtVerify(token, keyOf(secret), { algorithms: ["HS256"] });
    const claims = claimsSchema.parse(payload);
    return { deviceId: claims.sub, role: claims.role };
  } catch (error) {
    throw new AuthError(error instanceof Error ? error.message : "invalid token");
  }
}

/**
 * Whether a device's revocation (epoch ms, if any) covers a token issued at `issuedAtSeconds` (JWT `iat`). `iat` has
 * second resolution, so a token from the revocation's own second is covered too. Both gateways apply this rule.
 */
export function issuedBeforeRevocation(issuedAtSeconds: number, revokedAtMs: number | undefined): boolean {
  return revokedAtMs !== undefined && issuedAtSeconds <= Math.floor(revokedAtMs / 1000);
}

export function bearerToken(header: string | undefined): string | undefined {
  const match = /^Bearer\s+(\S+)$/i.exec(header ?? "");
  return match?.[1];
}
