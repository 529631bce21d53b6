import { decodeJwt } from "jose";
import { describe, expect, it } from "vitest";
import { AuthError, signToken, verifyToken, type Audience, type TokenClaims } from "./tokens.js";

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
