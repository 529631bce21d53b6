import { describe, expect, it } from "vitest";
import { z } from "zod";
import { envJwtSecret } from "./env-fields.js";
import { parseConfig } from "./load-config.js";

const schema = z.object({ AUTH_JWT_SECRET: envJwtSecret });
const parse = (value: string | undefined) => () => parseConfig(schema, { AUTH_JWT_SECRET: value });

describe("a JWT secret field", () => {
  it("accepts 32 random bytes", () => {
    const secret = "0123456789abcdef0123456789abcdef";
    expect(parseConfig(schema, { AUTH_JWT_SECRET: secret })).toEqual({ AUTH_JWT_SECRET: secret });
  });

  it.each([
    ["missing", undefined, /AUTH_JWT_SECRET: required \(32\+ bytes\)/],
    ["shorter than 32 bytes", "0123456789abcdef0123456789abcde", /AUTH_JWT_SECRET: shorter than 32 bytes/],
    ["the old compose default", "dev-secret-change-me", /AUTH_JWT_SECRET: a published placeholder/],
    ["the old k8s value", "change-me", /a published placeholder/],
    ["secret", "secret", /a published placeholder/],
    ["a long placeholder", "please-change-me-before-production-0123", /a published placeholder/],
  ])("refuses a secret that is %s in one line naming the variable", (_name, value, message) => {
    expect(parse(value)).toThrow(message);
  });
});
