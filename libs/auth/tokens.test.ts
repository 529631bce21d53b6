import { createHmac } from "node:crypto";
import { decodeJwt } from "jose";
import { describe, expect, it } from "vitest";
import {
  AuthError,
  issuedBeforeRevocation,
  MAX_ISSUED_AT_SKEW_SECONDS,
  signToken,
  verifyToken,
  type Audience,
  type TokenClaims,
} from "./tokens.js";

const OS_SECRET = "unit-os-secret-0123456789abcdef-0123";
const HARNESS_SECRET = "unit-harness-secret-0123456789abcdef";
const SECRETS: Record<Audience, string> = { os: OS_SECRET, harness: HARNESS_SECRET };

const lamp: TokenClaims = { audience: "os", role: "device", sub: "lamp-1" };
const peer: TokenClaims = { audience: "harness", role: "os", sub: "lamp-1" };

describe("tokens carry their surface", () => {
  it("a token names its audience and role, and verifies only at that audience", async () => {
    const token = await signToken(OS_SECRET, lamp);
    expect(decodeJwt(token)).toMatchObject({ aud: "os", role: "device", sub: "lamp-1" });
    await expect(verifyToken(OS_SECRET, token, "os")).resolves.toEqual({
      deviceId: "lamp-1",
      role: "device",
      audience: "os",
    });
    await expect(verifyToken(HARNESS_SECRET, token, "harness")).rejects.toThrow(/accepts "harness"/);
  });

  it("even with one secret for both surfaces, a token opens only its own", async () => {
    const shared = "one-secret-for-both-0123456789abcdef";
    await expect(verifyToken(shared, await signToken(shared, lamp), "harness")).rejects.toBeInstanceOf(
      AuthError,
    );
    await expect(verifyToken(shared, await signToken(shared, peer), "os")).rejects.toBeInstanceOf(AuthError);
  });

  it.each<[string, TokenClaims, Audience]>([
    ["an OS token at the Harness", lamp, "harness"],
    ["a Harness token at the OS", peer, "os"],
  ])("%s is refused with a message naming the accepted audience", async (_name, claims, at) => {
    const token = await signToken(SECRETS[claims.audience], claims);
    await expect(verifyToken(SECRETS[at], token, at)).rejects.toThrow(`accepts "${at}"`);
  });

  it("roles are per audience: a Harness operator verifies, a Lamp role at the Harness does not", async () => {
    const harnessOperator = await signToken(HARNESS_SECRET, { ...peer, role: "operator" });
    await expect(verifyToken(HARNESS_SECRET, harnessOperator, "harness")).resolves.toMatchObject({
      role: "operator",
    });
    const forged = { audience: "harness", role: "device", sub: "lamp-1" } as unknown as TokenClaims;
    await expect(
      verifyToken(HARNESS_SECRET, await signToken(HARNESS_SECRET, forged), "harness"),
    ).rejects.toThrow(AuthError);
  });

  it("a malformed token is an AuthError, never another error", async () => {
    await expect(verifyToken(OS_SECRET, "not-a-jwt", "os")).rejects.toThrow("malformed token");
  });
});

/** An HS256 token with exactly these claims (signToken always sets `iat` and a lifetime of its own). */
function tokenWith(secret: string, claims: Record<string, unknown>): string {
  const part = (value: unknown) => Buffer.from(JSON.stringify(value)).toString("base64url");
  const input = `${part({ alg: "HS256", typ: "JWT" })}.${part(claims)}`;
  return `${input}.${createHmac("sha256", secret).update(input).digest("base64url")}`;
}

describe("a token lives no longer than its audience allows", () => {
  const now = () => Math.floor(Date.now() / 1000);
  const lampClaims = (claims: Record<string, unknown>) => ({
    sub: "lamp-1",
    role: "device",
    aud: "os",
    ...claims,
  });

  it("exp - iat above the maximum is refused, at the maximum accepted", async () => {
    const at = now();
    const longest = tokenWith(OS_SECRET, lampClaims({ iat: at, exp: at + 3600 }));
    await expect(verifyToken(OS_SECRET, longest, "os", 3600)).resolves.toMatchObject({ deviceId: "lamp-1" });
    const longer = tokenWith(OS_SECRET, lampClaims({ iat: at, exp: at + 3601 }));
    await expect(verifyToken(OS_SECRET, longer, "os", 3600)).rejects.toThrow("lifetime exceeds");
  });

  it("an exp in 2100 is refused under the default maximum", async () => {
    const token = tokenWith(OS_SECRET, lampClaims({ iat: now(), exp: 4_102_444_800 }));
    await expect(verifyToken(OS_SECRET, token, "os")).rejects.toThrow("lifetime exceeds");
  });

  it("without iat, the lifetime counts from now", async () => {
    await expect(
      verifyToken(OS_SECRET, tokenWith(OS_SECRET, lampClaims({ exp: now() + 60 })), "os", 3600),
    ).resolves.toMatchObject({ role: "device" });
    await expect(
      verifyToken(OS_SECRET, tokenWith(OS_SECRET, lampClaims({ exp: now() + 7200 })), "os", 3600),
    ).rejects.toThrow("lifetime exceeds");
  });

  it("an iat beyond the allowed skew is refused; within it accepted", async () => {
    const ahead = (seconds: number) =>
      tokenWith(OS_SECRET, lampClaims({ iat: now() + seconds, exp: now() + seconds + 600 }));
    await expect(verifyToken(OS_SECRET, ahead(MAX_ISSUED_AT_SKEW_SECONDS - 5), "os")).resolves.toBeDefined();
    await expect(verifyToken(OS_SECRET, ahead(MAX_ISSUED_AT_SKEW_SECONDS + 5), "os")).rejects.toThrow(
      "issued in the future",
    );
  });
});

describe("revocation covers every token issued up to its second", () => {
  it.each([
    ["issued before", 99, true],
    ["issued in the revocation's second", 100, true],
    ["issued after", 101, false],
    ["without iat (the epoch)", 0, true],
  ])("%s", (_name, issuedAt, covered) => {
    expect(issuedBeforeRevocation(issuedAt, 100_500)).toBe(covered);
  });

  it("nothing is covered without a revocation", () => {
    expect(issuedBeforeRevocation(0, undefined)).toBe(false);
  });
});
